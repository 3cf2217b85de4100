// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=assembly opt-level=0" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// math ops that lower to LLVM intrinsics (popc, clz, brev-based ctz), not to libdevice calls, so no CUDA
// toolkit's libdevice is needed; PTX at O0 (format by its long name, assembly).
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %out = memref.alloc() : memref<3x8xi32>
  %unranked = memref.cast %out : memref<3x8xi32> to memref<*xi32>
  gpu.host_register %unranked : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %t = arith.index_cast %tx : index to i32
    %shift = arith.constant 5 : i32
    %one = arith.constant 1 : i32
    %bits = arith.shli %one, %t : i32
    %mixed = arith.ori %bits, %shift : i32
    %pop = math.ctpop %mixed : i32
    %lead = math.ctlz %bits : i32
    %trail = math.cttz %bits : i32
    %r0 = arith.constant 0 : index
    %r2 = arith.constant 2 : index
    memref.store %pop, %out[%r0, %tx] : memref<3x8xi32>
    memref.store %lead, %out[%c1, %tx] : memref<3x8xi32>
    memref.store %trail, %out[%r2, %tx] : memref<3x8xi32>
    gpu.terminator
  }
  // CHECK: {{\[}}[2,{{ +}}3,{{ +}}2,{{ +}}3,{{ +}}3,
  call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
