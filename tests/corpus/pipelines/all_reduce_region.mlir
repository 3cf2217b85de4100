// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// An all-reduce whose combiner is a region (not a named op): the larger of the two values by their low four
// bits, so no built-in reduction computes it.
func.func @main() {
  %result = memref.alloc() : memref<1xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c50 = arith.constant 50 : index
  %out = memref.cast %result : memref<1xi32> to memref<*xi32>
  gpu.host_register %out : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c50, %sy = %c1, %sz = %c1) {
    %t = arith.index_cast %tx : index to i32
    %seven = arith.constant 7 : i32
    %v = arith.muli %t, %seven : i32
    %r = gpu.all_reduce %v {
    ^bb(%lhs : i32, %rhs : i32):
      %mask = arith.constant 15 : i32
      %l = arith.andi %lhs, %mask : i32
      %h = arith.andi %rhs, %mask : i32
      %keep = arith.cmpi uge, %l, %h : i32
      %pick = arith.select %keep, %lhs, %rhs : i32
      "gpu.yield"(%pick) : (i32) -> ()
    } : (i32) -> (i32)
    memref.store %r, %result[%c0] : memref<1xi32>
    gpu.terminator
  }
  // CHECK: [{{[0-9]+}}]
  call @printMemrefI32(%out) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
