// RUN: mlir-opt %s -pass-pipeline='builtin.module(convert-scf-to-cf, gpu-kernel-outlining, gpu.module(strip-debuginfo, convert-gpu-to-rocdl{chipset=gfx942 use-bare-ptr-memref-call-conv=true}), rocdl-attach-target{chip=gfx942}, gpu-to-llvm{use-bare-pointers-for-kernels=true}, reconcile-unrealized-casts, gpu-module-to-binary{format=isa})' \
// RUN: | mlir-runner --shared-libs=%mlir_rocm_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// ROCDL, written as one --pass-pipeline as ROCm tests chain it: a vector add on gfx942 where the kernel takes
// bare pointers (both sides of the launch agree on it), the device views of host-registered buffers got from
// the runtime wrapper.
func.func @axpy(%x: memref<6xf32>, %y: memref<6xf32>, %out: memref<6xf32>, %a: f32) {
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
    %xi = memref.load %x[%tx] : memref<6xf32>
    %yi = memref.load %y[%tx] : memref<6xf32>
    %ax = arith.mulf %a, %xi : f32
    %r = arith.addf %ax, %yi : f32
    memref.store %r, %out[%tx] : memref<6xf32>
    gpu.terminator
  }
  return
}
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %a = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %x = memref.alloc() : memref<6xf32>
  %y = memref.alloc() : memref<6xf32>
  %out = memref.alloc() : memref<6xf32>
  scf.for %i = %c0 to %c6 step %c1 {
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    memref.store %f, %x[%i] : memref<6xf32>
    memref.store %one, %y[%i] : memref<6xf32>
  }
  %ux = memref.cast %x : memref<6xf32> to memref<*xf32>
  %uy = memref.cast %y : memref<6xf32> to memref<*xf32>
  %uo = memref.cast %out : memref<6xf32> to memref<*xf32>
  gpu.host_register %ux : memref<*xf32>
  gpu.host_register %uy : memref<*xf32>
  gpu.host_register %uo : memref<*xf32>
  %dx = call @device_view(%x) : (memref<6xf32>) -> memref<6xf32>
  %dy = call @device_view(%y) : (memref<6xf32>) -> memref<6xf32>
  %dout = call @device_view(%out) : (memref<6xf32>) -> memref<6xf32>
  call @axpy(%dx, %dy, %dout, %a) : (memref<6xf32>, memref<6xf32>, memref<6xf32>, f32) -> ()
  // CHECK: [1, 3, 5, 7, 9, 11]
  call @printMemrefF32(%uo) : (memref<*xf32>) -> ()
  return
}
func.func @device_view(%host: memref<6xf32>) -> memref<6xf32> {
  %dynamic = memref.cast %host : memref<6xf32> to memref<?xf32>
  %device = call @mgpuMemGetDeviceMemRef1dFloat(%dynamic) : (memref<?xf32>) -> memref<?xf32>
  %static = memref.cast %device : memref<?xf32> to memref<6xf32>
  return %static : memref<6xf32>
}
func.func private @mgpuMemGetDeviceMemRef1dFloat(memref<?xf32>) -> memref<?xf32>
func.func private @printMemrefF32(memref<*xf32>)
