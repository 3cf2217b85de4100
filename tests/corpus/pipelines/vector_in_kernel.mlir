// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Vector ops inside a kernel (the pipeline lowers vector on the device too): each thread reads a row of three
// with vector.load (vector.transfer_read leaves an index cast MLIR 22's pipeline cannot translate), scales it,
// reduces it with vector.reduction and writes the scaled row back with vector.store.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %rows = memref.alloc() : memref<3x3xf32>
  %sums = memref.alloc() : memref<3xf32>
  scf.for %i = %c0 to %c3 step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %ij = arith.addi %i, %j : index
      %n = arith.index_cast %ij : index to i32
      %f = arith.sitofp %n : i32 to f32
      memref.store %f, %rows[%i, %j] : memref<3x3xf32>
    }
  }
  %ur = memref.cast %rows : memref<3x3xf32> to memref<*xf32>
  %us = memref.cast %sums : memref<3xf32> to memref<*xf32>
  gpu.host_register %ur : memref<*xf32>
  gpu.host_register %us : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
    %row = vector.load %rows[%tx, %c0] : memref<3x3xf32>, vector<3xf32>
    %two = arith.constant dense<2.0> : vector<3xf32>
    %scaled = arith.mulf %row, %two : vector<3xf32>
    %sum = vector.reduction <add>, %scaled : vector<3xf32> into f32
    memref.store %sum, %sums[%tx] : memref<3xf32>
    vector.store %scaled, %rows[%tx, %c0] : memref<3x3xf32>, vector<3xf32>
    gpu.terminator
  }
  // CHECK: [6, 12, 18]
  call @printMemrefF32(%us) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
