// RUN: mlir-opt %s \
// RUN: | mlir-opt -gpu-kernel-outlining \
// RUN: | mlir-opt -pass-pipeline='builtin.module(gpu.module(strip-debuginfo,convert-gpu-to-nvvm),nvvm-attach-target{chip=sm_80 features=+ptx80})' \
// RUN: | mlir-opt -gpu-async-region -gpu-to-llvm -gpu-module-to-binary \
// RUN: | mlir-opt -async-to-async-runtime -async-runtime-policy-based-ref-counting \
// RUN: | mlir-opt -convert-async-to-llvm -convert-arith-to-llvm -convert-cf-to-llvm -convert-func-to-llvm -reconcile-unrealized-casts \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_async_runtime \
// RUN:   --shared-libs=%mlir_runner_utils --entry-point-result=void -O0 \
// RUN: | FileCheck %s
// Host code in async.execute regions (lowered to coroutines after serialization): two device buffers filled
// concurrently from one host buffer, then a kernel that joins them, awaited before printing. The policy-based
// reference counting: MLIR 22's -async-runtime-ref-counting orders its output differently from run to run (the
// same RUN line gives two different host.ll), so no build can be compared with it byte for byte.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %host = memref.alloc(%c3) : memref<?xi32>
  %unranked = memref.cast %host : memref<?xi32> to memref<*xi32>
  gpu.host_register %unranked : memref<*xi32>
  %five = arith.constant 5 : i32
  memref.store %five, %host[%c0] : memref<?xi32>
  memref.store %five, %host[%c1] : memref<?xi32>
  %c2 = arith.constant 2 : index
  memref.store %five, %host[%c2] : memref<?xi32>
  %ta, %fa = async.execute () -> !async.value<memref<?xi32>> {
    %a = gpu.alloc(%c3) : memref<?xi32>
    gpu.memcpy %a, %host : memref<?xi32>, memref<?xi32>
    async.yield %a : memref<?xi32>
  }
  %tb, %fb = async.execute () -> !async.value<memref<?xi32>> {
    %b = gpu.alloc(%c3) : memref<?xi32>
    gpu.memcpy %b, %host : memref<?xi32>, memref<?xi32>
    async.yield %b : memref<?xi32>
  }
  %done = async.execute [%ta, %tb] (%fa as %a : !async.value<memref<?xi32>>,
                                    %fb as %b : !async.value<memref<?xi32>>) {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c3, %sy = %c1, %sz = %c1) {
      %x = memref.load %a[%tx] : memref<?xi32>
      %y = memref.load %b[%tx] : memref<?xi32>
      %t = arith.index_cast %tx : index to i32
      %xy = arith.muli %x, %y : i32
      %r = arith.addi %xy, %t : i32
      memref.store %r, %host[%tx] : memref<?xi32>
      gpu.terminator
    }
    async.yield
  }
  async.await %done : !async.token
  // CHECK: [25, 26, 27]
  call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
