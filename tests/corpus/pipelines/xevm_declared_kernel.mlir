// RUN: mlir-opt %s --gpu-lower-to-xevm-pipeline="xegpu-op-level=lane" \
// RUN: | mlir-runner --shared-libs=%mlir_levelzero_runtime --entry-point-result=void | FileCheck %s
// A kernel declared without a body ahead of the one launched: upstream's XeVM serializer gives the first kernel
// of the module (here the declaration) the sub-group size, which LLVM IR prints after `declare`.
module @declared attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func spir_kernelcc @scale_elsewhere(!llvm.ptr<1>, f32) attributes {gpu.kernel}
    gpu.func @scale(%data: memref<16xf32>, %factor: f32) kernel {
      %i = gpu.thread_id x
      %x = memref.load %data[%i] : memref<16xf32>
      %y = arith.mulf %x, %factor : f32
      memref.store %y, %data[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %two = arith.constant 2.0 : f32
    %data = gpu.alloc () : memref<16xf32>
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%data : memref<16xf32>, %two : f32)
    gpu.dealloc %data : memref<16xf32>
    return
  }
}
