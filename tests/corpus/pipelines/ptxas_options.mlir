// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=bin ptxas-cmd-options='--maxrregcount=24 --warn-on-spills'" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// ptxas options given through the pipeline (ptxas-cmd-options, quoted inside the pipeline's quotes): the
// attach pass records them in the target's flags and the cubin is built with at most 24 registers per thread.
// The kernel: two reductions of different kinds (sum and product), each with its own workgroup buffer.
func.func @main() {
  %a = memref.alloc() : memref<2x6xf32>
  %b = memref.alloc() : memref<2x6xf32>
  %sums = memref.alloc() : memref<2xf32>
  %products = memref.alloc() : memref<2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  scf.for %r = %c0 to %c2 step %c1 {
    scf.for %c = %c0 to %c6 step %c1 {
      %i = arith.index_cast %c : index to i32
      %f = arith.sitofp %i : i32 to f32
      %x = arith.addf %f, %one : f32
      memref.store %x, %a[%r, %c] : memref<2x6xf32>
      memref.store %two, %b[%r, %c] : memref<2x6xf32>
    }
  }
  %ua = memref.cast %a : memref<2x6xf32> to memref<*xf32>
  %ub = memref.cast %b : memref<2x6xf32> to memref<*xf32>
  %us = memref.cast %sums : memref<2xf32> to memref<*xf32>
  %up = memref.cast %products : memref<2xf32> to memref<*xf32>
  gpu.host_register %ua : memref<*xf32>
  gpu.host_register %ub : memref<*xf32>
  gpu.host_register %us : memref<*xf32>
  gpu.host_register %up : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
    %x = memref.load %a[%bx, %tx] : memref<2x6xf32>
    %sum = gpu.all_reduce add %x uniform {} : (f32) -> (f32)
    memref.store %sum, %sums[%bx] : memref<2xf32>
    %y = memref.load %b[%bx, %tx] : memref<2x6xf32>
    %product = gpu.all_reduce mul %y uniform {} : (f32) -> (f32)
    memref.store %product, %products[%bx] : memref<2xf32>
    gpu.terminator
  }
  // CHECK: [21, 21]
  call @printMemrefF32(%us) : (memref<*xf32>) -> ()
  // CHECK: [64, 64]
  call @printMemrefF32(%up) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
