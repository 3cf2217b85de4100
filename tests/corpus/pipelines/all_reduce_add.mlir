// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// A float sum over a three-dimensional block (x, y and z all take part), written once by thread (0, 0, 0).
func.func @main() {
  %out = memref.alloc() : memref<1xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %unranked = memref.cast %out : memref<1xf32> to memref<*xf32>
  gpu.host_register %unranked : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c5, %sy = %c3, %sz = %c2) {
    %plane = arith.muli %sx, %sy : index
    %zs = arith.muli %tz, %plane : index
    %ys = arith.muli %ty, %sx : index
    %yz = arith.addi %zs, %ys : index
    %linear = arith.addi %yz, %tx : index
    %i = arith.index_cast %linear : index to i32
    %f = arith.uitofp %i : i32 to f32
    %sum = gpu.all_reduce add %f uniform {} : (f32) -> (f32)
    %first = arith.cmpi eq, %linear, %c0 : index
    scf.if %first {
      memref.store %sum, %out[%c0] : memref<1xf32>
    }
    gpu.terminator
  }
  // CHECK: [435]
  call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
