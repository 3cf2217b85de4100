// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Tensor cores through the gpu dialect's subgroup MMA ops: a 16x16x16 f16 product accumulated in f16 by one
// warp (wmma.load / wmma.mma / wmma.store), with an elementwise op on the accumulator fragment, on host-registered
// memory.
func.func @main() {
  %a = memref.alloc() : memref<16x16xf16>
  %c = memref.alloc() : memref<16x16xf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %half = arith.constant 0.5 : f16
  %two = arith.constant 2.0 : f16
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      memref.store %half, %a[%i, %j] : memref<16x16xf16>
      memref.store %two, %c[%i, %j] : memref<16x16xf16>
    }
  }
  %ua = memref.cast %a : memref<16x16xf16> to memref<*xf16>
  %uc = memref.cast %c : memref<16x16xf16> to memref<*xf16>
  gpu.host_register %ua : memref<*xf16>
  gpu.host_register %uc : memref<*xf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %lhs = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index}
        : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %rhs = gpu.subgroup_mma_load_matrix %a[%c0, %c0] {leadDimension = 16 : index, transpose}
        : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %acc = gpu.subgroup_mma_load_matrix %c[%c0, %c0] {leadDimension = 16 : index}
        : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "COp">
    %product = gpu.subgroup_mma_compute %lhs, %rhs, %acc
        : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf16, "COp">
    %scale = gpu.subgroup_mma_constant_matrix %two : !gpu.mma_matrix<16x16xf16, "COp">
    %scaled = gpu.subgroup_mma_elementwise mulf %product, %scale
        : (!gpu.mma_matrix<16x16xf16, "COp">, !gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">
    gpu.subgroup_mma_store_matrix %scaled, %c[%c0, %c0] {leadDimension = 16 : index}
        : !gpu.mma_matrix<16x16xf16, "COp">, memref<16x16xf16>
    gpu.terminator
  }
  %row = memref.subview %c[0, 0] [1, 4] [1, 1] : memref<16x16xf16> to memref<4xf16, strided<[1]>>
  %first = memref.load %row[%c0] : memref<4xf16, strided<[1]>>
  %as_f32 = arith.extf %first : f16 to f32
  // CHECK: 12
  vector.print %as_f32 : f32
  return
}
