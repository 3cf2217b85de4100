// RUN: mlir-opt %s -gpu-kernel-outlining -convert-scf-to-cf -convert-gpu-to-nvvm="index-bitwidth=32 has-redux=1" \
// RUN:   -nvvm-attach-target="chip=sm_80 features=+ptx80 O=2" -gpu-to-llvm -reconcile-unrealized-casts \
// RUN:   -gpu-module-to-binary="format=bin" -convert-func-to-llvm -reconcile-unrealized-casts \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// An expanded pass list as older upstream tests wrote it, one flag per pass: -convert-gpu-to-nvvm as a flag
// runs on each gpu.module (mlir-opt nests it), 32-bit indices on the device and redux.sync for the integer
// sum (has-redux), a cubin at O2, host passes after the serialization.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %out = memref.alloc() : memref<1xi32>
  %unranked = memref.cast %out : memref<1xi32> to memref<*xi32>
  gpu.host_register %unranked : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %t = arith.index_cast %tx : index to i32
    %sum = gpu.subgroup_reduce add %t uniform : (i32) -> i32
    %leader = arith.cmpi eq, %tx, %c0 : index
    scf.if %leader {
      memref.store %sum, %out[%c0] : memref<1xi32>
    }
    gpu.terminator
  }
  // CHECK: [496]
  call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
