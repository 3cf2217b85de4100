// RUN: mlir-opt %s --gpu-lower-to-xevm-pipeline="xegpu-op-level=lane" \
// RUN: | mlir-runner --shared-libs=%mlir_levelzero_runtime --entry-point-result=void | FileCheck %s
// An element-wise kernel on memrefs, outlined and launched from host code, lowered by upstream's XeVM pipeline.
module @add attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<8xf32>
      %y = memref.load %b[%i] : memref<8xf32>
      %z = arith.addf %x, %y : f32
      memref.store %z, %c[%i] : memref<8xf32>
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %a = gpu.alloc () : memref<8xf32>
    %b = gpu.alloc () : memref<8xf32>
    %c = gpu.alloc () : memref<8xf32>
    gpu.launch_func @kernels::@add blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%a : memref<8xf32>, %b : memref<8xf32>, %c : memref<8xf32>)
    gpu.dealloc %a : memref<8xf32>
    gpu.dealloc %b : memref<8xf32>
    gpu.dealloc %c : memref<8xf32>
    return
  }
}
