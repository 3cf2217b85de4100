// RUN: mlir-opt %s -gpu-kernel-outlining -convert-scf-to-cf -nvvm-attach-target="chip=sm_80 features=+ptx80 O=3 fast=true ftz=true" \
// RUN:   -convert-gpu-to-nvvm -gpu-to-llvm -reconcile-unrealized-casts -gpu-module-to-binary="format=isa" \
// RUN: | FileCheck %s
// The attach pass's fast-math and flush-to-zero switches, recorded as the target's flags (MLIR 22's serializer
// gives the same PTX with and without them), on a float kernel behind a host function, as PTX.
// CHECK: div.rn.f32
func.func @normalize(%xs: memref<32xf32>, %ys: memref<32xf32>, %out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %x = memref.load %xs[%tx] : memref<32xf32>
    %y = memref.load %ys[%tx] : memref<32xf32>
    %xx = arith.mulf %x, %x : f32
    %yy = arith.mulf %y, %y : f32
    %n = arith.addf %xx, %yy : f32
    %q = arith.divf %x, %n : f32
    memref.store %q, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
