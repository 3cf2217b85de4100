// RUN: mlir-opt %s \
// RUN: | mlir-opt -convert-scf-to-cf \
// RUN: | mlir-opt -gpu-kernel-outlining \
// RUN: | mlir-opt -pass-pipeline='builtin.module(gpu.module(strip-debuginfo,convert-gpu-to-nvvm),nvvm-attach-target{chip=sm_80 features=+ptx80})' \
// RUN: | mlir-opt -gpu-async-region -gpu-to-llvm -reconcile-unrealized-casts -gpu-module-to-binary="format=fatbin" \
// RUN: | mlir-opt -convert-func-to-llvm -reconcile-unrealized-casts \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// A chain of mlir-opt runs, as older upstream tests pipe them: outline, lower the device code in a
// --pass-pipeline, then make the host's gpu ops asynchronous (gpu-async-region threads one stream's tokens
// through the allocations, copies and launch) before lowering and serializing.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %host = memref.alloc() : memref<5xf32>
  %init = arith.constant 2.5 : f32
  scf.for %i = %c0 to %c5 step %c1 {
    memref.store %init, %host[%i] : memref<5xf32>
  }
  %stream = gpu.wait async
  %dev, %t0 = gpu.alloc async [%stream] () : memref<5xf32>
  %t1 = gpu.memcpy async [%t0] %dev, %host : memref<5xf32>, memref<5xf32>
  gpu.wait [%t1]
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c5, %sy = %c1, %sz = %c1) {
    %v = memref.load %dev[%tx] : memref<5xf32>
    %t = arith.index_cast %tx : index to i32
    %f = arith.sitofp %t : i32 to f32
    %w = arith.addf %v, %f : f32
    memref.store %w, %dev[%tx] : memref<5xf32>
    gpu.terminator
  }
  %back = gpu.wait async
  %t2 = gpu.memcpy async [%back] %host, %dev : memref<5xf32>, memref<5xf32>
  gpu.wait [%t2]
  %unranked = memref.cast %host : memref<5xf32> to memref<*xf32>
  // CHECK: [2.5, 3.5, 4.5, 5.5, 6.5]
  call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
