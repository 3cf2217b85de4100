// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=bin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void 2>&1 \
// RUN: | FileCheck %s
// cf.assert in a kernel (NVVM lowers it to __assertfail with the message, file and line): the odd threads
// fail it, the even ones print that they passed.
// CHECK-DAG: thread 2 passed
// CHECK-DAG: odd thread reached the check
func.func @main() {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %two = arith.constant 2 : index
    %zero = arith.constant 0 : index
    %r = arith.remui %tx, %two : index
    %even = arith.cmpi eq, %r, %zero : index
    cf.assert %even, "odd thread reached the check"
    %t = arith.index_cast %tx : index to i32
    gpu.printf "thread %d passed\n", %t : i32
    gpu.terminator
  }
  return
}
