// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// The four shuffle modes (up, down, idx, xor) in one outlined kernel over a full warp; each lane stores the
// values it received, and the validity flag of the `up` shuffle picks its own value where no lane was there.
module attributes {gpu.container_module} {
  gpu.module @lanes {
    gpu.func @exchange(%out: memref<4x32xi32>) kernel {
      %lane = gpu.thread_id x
      %l = arith.index_cast %lane : index to i32
      %width = arith.constant 32 : i32
      %two = arith.constant 2 : i32
      %five = arith.constant 5 : i32
      %v = arith.muli %l, %l : i32
      %up, %up_ok = gpu.shuffle up %v, %two, %width : i32
      %kept = arith.select %up_ok, %up, %v : i32
      %down, %down_ok = gpu.shuffle down %v, %two, %width : i32
      %idx, %idx_ok = gpu.shuffle idx %v, %five, %width : i32
      %x, %x_ok = gpu.shuffle xor %v, %five, %width : i32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      memref.store %kept, %out[%c0, %lane] : memref<4x32xi32>
      memref.store %down, %out[%c1, %lane] : memref<4x32xi32>
      memref.store %idx, %out[%c2, %lane] : memref<4x32xi32>
      memref.store %x, %out[%c3, %lane] : memref<4x32xi32>
      gpu.return
    }
  }
  func.func @main() {
    %out = memref.alloc() : memref<4x32xi32>
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %unranked = memref.cast %out : memref<4x32xi32> to memref<*xi32>
    gpu.host_register %unranked : memref<*xi32>
    gpu.launch_func @lanes::@exchange blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%out : memref<4x32xi32>)
    // CHECK: {{\[}}[0,{{ +}}1,{{ +}}0,{{ +}}1,{{ +}}4,
    call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
