// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="host-bare-ptr-calling-convention=1 cubin-chip=sm_86 cubin-features=+ptx71 cubin-format=bin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Bare pointers on the host side only (host functions pass statically shaped memrefs as plain pointers; the
// kernel keeps memref descriptors), for sm_86 with the lowest PTX version it takes (7.1), as a cubin.
func.func @scale(%buf: memref<8xf32>, %factor: f32) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %v = memref.load %buf[%tx] : memref<8xf32>
    %w = arith.mulf %v, %factor : f32
    memref.store %w, %buf[%tx] : memref<8xf32>
    gpu.printf "%f\n", %w : f32
    gpu.terminator
  }
  return
}
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %three = arith.constant 3.0 : f32
  %host = memref.alloc() : memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    memref.store %f, %host[%i] : memref<8xf32>
  }
  %t0 = gpu.wait async
  %dev, %t1 = gpu.alloc async [%t0] () : memref<8xf32>
  %t2 = gpu.memcpy async [%t1] %dev, %host : memref<8xf32>, memref<8xf32>
  gpu.wait [%t2]
  // CHECK-DAG: 21.000000
  call @scale(%dev, %three) : (memref<8xf32>, f32) -> ()
  %t3 = gpu.wait async
  %t4 = gpu.dealloc async [%t3] %dev : memref<8xf32>
  gpu.wait [%t4]
  return
}
