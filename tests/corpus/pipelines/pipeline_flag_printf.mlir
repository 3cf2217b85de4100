// RUN: mlir-opt %s --pass-pipeline="builtin.module(gpu-lower-to-nvvm-pipeline{cubin-chip=sm_75 cubin-features=+ptx70 cubin-format=isa opt-level=1})" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// The named pipeline given through --pass-pipeline, for Turing (sm_75, PTX 7.0) at O1, embedded as PTX:
// gpu.printf from a 2-D launch, each thread printing its coordinates and a float.
// CHECK-DAG: thread (1, 1) says 1.5
func.func @main() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c3, %sz = %c1) {
    %x = arith.index_cast %tx : index to i32
    %y = arith.index_cast %ty : index to i32
    %xf = arith.sitofp %x : i32 to f32
    %half = arith.constant 0.5 : f32
    %yf = arith.sitofp %y : i32 to f32
    %s = arith.mulf %yf, %half : f32
    %v = arith.addf %xf, %s : f32
    %vd = arith.extf %v : f32 to f64
    gpu.printf "thread (%d, %d) says %g\n", %x, %y, %vd : i32, i32, f64
    gpu.terminator
  }
  return
}
