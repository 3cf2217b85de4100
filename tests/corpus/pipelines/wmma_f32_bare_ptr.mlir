// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="host-bare-ptr-calling-convention=1 kernel-bare-ptr-calling-convention=1 cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --entry-point-result=void \
// RUN: | FileCheck %s
// The bare-pointer calling convention on both sides (statically shaped memrefs pass as plain pointers to the
// kernel and between host functions): an f16 x f16 -> f32 tensor-core product on gpu.alloc'ed device memory
// filled by gpu.memcpy, called through a host function taking memrefs.
func.func @matmul(%lhs: memref<16x16xf16>, %acc: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %a = gpu.subgroup_mma_load_matrix %lhs[%c0, %c0] {leadDimension = 16 : index}
        : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %b = gpu.subgroup_mma_load_matrix %lhs[%c0, %c0] {leadDimension = 16 : index}
        : memref<16x16xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %c = gpu.subgroup_mma_load_matrix %acc[%c0, %c0] {leadDimension = 16 : index}
        : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
    %d = gpu.subgroup_mma_compute %a, %b, %c
        : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    gpu.subgroup_mma_store_matrix %d, %acc[%c0, %c0] {leadDimension = 16 : index}
        : !gpu.mma_matrix<16x16xf32, "COp">, memref<16x16xf32>
    gpu.printf "done\n"
    gpu.terminator
  }
  return
}
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f16
  %zero = arith.constant 0.0 : f32
  %host_lhs = memref.alloc() : memref<16x16xf16>
  %host_acc = memref.alloc() : memref<16x16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      memref.store %one, %host_lhs[%i, %j] : memref<16x16xf16>
      memref.store %zero, %host_acc[%i, %j] : memref<16x16xf32>
    }
  }
  %t0 = gpu.wait async
  %lhs, %t1 = gpu.alloc async [%t0] () : memref<16x16xf16>
  %acc, %t2 = gpu.alloc async [%t1] () : memref<16x16xf32>
  %t3 = gpu.memcpy async [%t2] %lhs, %host_lhs : memref<16x16xf16>, memref<16x16xf16>
  %t4 = gpu.memcpy async [%t3] %acc, %host_acc : memref<16x16xf32>, memref<16x16xf32>
  gpu.wait [%t4]
  // CHECK: done
  call @matmul(%lhs, %acc) : (memref<16x16xf16>, memref<16x16xf32>) -> ()
  %t5 = gpu.wait async
  %t6 = gpu.dealloc async [%t5] %lhs : memref<16x16xf16>
  %t7 = gpu.dealloc async [%t6] %acc : memref<16x16xf32>
  gpu.wait [%t7]
  return
}
