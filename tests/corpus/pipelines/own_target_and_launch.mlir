// RUN: mlir-opt %s -gpu-kernel-outlining -convert-scf-to-cf \
// RUN:   -nvvm-attach-target="module=main_kernel chip=sm_80 features=+ptx80 O=3" -convert-gpu-to-nvvm \
// RUN:   -gpu-to-llvm -reconcile-unrealized-casts -gpu-module-to-binary="format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// A hand-written module with its own target (sm_90 cubin settings in the file) next to a gpu.launch that the
// pipeline outlines and attaches its target to (the attach pass names only `main_kernel`): both are lowered
// by the same passes, each keeps the one target it has.
module attributes {gpu.container_module} {
  gpu.module @prepare [#nvvm.target<O = 2, chip = "sm_90", features = "+ptx80">] {
    gpu.func @fill(%buf: memref<16xi32>, %value: i32) kernel {
      %i = gpu.thread_id x
      %n = arith.index_cast %i : index to i32
      %v = arith.addi %n, %value : i32
      memref.store %v, %buf[%i] : memref<16xi32>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %hundred = arith.constant 100 : i32
    %buf = memref.alloc() : memref<16xi32>
    %unranked = memref.cast %buf : memref<16xi32> to memref<*xi32>
    gpu.host_register %unranked : memref<*xi32>
    gpu.launch_func @prepare::@fill blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1)
        args(%buf : memref<16xi32>, %hundred : i32)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
      %v = memref.load %buf[%tx] : memref<16xi32>
      %two = arith.constant 2 : i32
      %w = arith.muli %v, %two : i32
      memref.store %w, %buf[%tx] : memref<16xi32>
      gpu.terminator
    }
    // CHECK: [200, 202, 204,
    call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
