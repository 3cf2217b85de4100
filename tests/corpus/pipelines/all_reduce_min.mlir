// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=binary opt-level=3" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Float minimum (minimumf: minnumf would call libdevice's __nv_fminf) of each row, pre-outlined: the host
// launches the kernel with gpu.launch_func and the module is embedded as a cubin built at O3
// (format by its long name, binary).
module attributes {gpu.container_module} {
  gpu.module @reduce_min {
    gpu.func @row_min(%data: memref<2x40xf32>, %result: memref<2xf32>) kernel {
      %row = gpu.block_id x
      %col = gpu.thread_id x
      %v = memref.load %data[%row, %col] : memref<2x40xf32>
      %m = gpu.all_reduce minimumf %v uniform {} : (f32) -> (f32)
      memref.store %m, %result[%row] : memref<2xf32>
      gpu.return
    }
  }
  func.func @main() {
    %data = memref.alloc() : memref<2x40xf32>
    %result = memref.alloc() : memref<2xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c40 = arith.constant 40 : index
    %base = arith.constant 20.0 : f32
    scf.for %r = %c0 to %c2 step %c1 {
      scf.for %c = %c0 to %c40 step %c1 {
        %rc = arith.addi %r, %c : index
        %i = arith.index_cast %rc : index to i32
        %f = arith.sitofp %i : i32 to f32
        %v = arith.subf %base, %f : f32
        memref.store %v, %data[%r, %c] : memref<2x40xf32>
      }
    }
    %in = memref.cast %data : memref<2x40xf32> to memref<*xf32>
    %out = memref.cast %result : memref<2xf32> to memref<*xf32>
    gpu.host_register %in : memref<*xf32>
    gpu.host_register %out : memref<*xf32>
    gpu.launch_func @reduce_min::@row_min blocks in (%c2, %c1, %c1) threads in (%c40, %c1, %c1)
        args(%data : memref<2x40xf32>, %result : memref<2xf32>)
    // CHECK: [-19, -20]
    call @printMemrefF32(%out) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
