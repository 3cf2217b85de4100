// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Asynchronous host code: a stream from gpu.wait async, device buffers from gpu.alloc async, copies and two
// launches chained by their tokens, and a final gpu.wait on the last one (gpu-to-llvm lowers the tokens to
// streams and events).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %host = memref.alloc() : memref<4xi32>
  %seven = arith.constant 7 : i32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %seven, %host[%i] : memref<4xi32>
  }
  %t0 = gpu.wait async
  %dev, %t1 = gpu.alloc async [%t0] () : memref<4xi32>
  %t2 = gpu.memcpy async [%t1] %dev, %host : memref<4xi32>, memref<4xi32>
  %t3 = gpu.launch async [%t2] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = memref.load %dev[%tx] : memref<4xi32>
    %t = arith.index_cast %tx : index to i32
    %w = arith.addi %v, %t : i32
    memref.store %w, %dev[%tx] : memref<4xi32>
    gpu.terminator
  }
  %t4 = gpu.launch async [%t3] blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = memref.load %dev[%tx] : memref<4xi32>
    %w = arith.muli %v, %v : i32
    memref.store %w, %dev[%tx] : memref<4xi32>
    gpu.terminator
  }
  %t5 = gpu.memcpy async [%t4] %host, %dev : memref<4xi32>, memref<4xi32>
  %t6 = gpu.dealloc async [%t5] %dev : memref<4xi32>
  gpu.wait [%t6]
  %unranked = memref.cast %host : memref<4xi32> to memref<*xi32>
  // CHECK: [49, 64, 81, 100]
  call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
