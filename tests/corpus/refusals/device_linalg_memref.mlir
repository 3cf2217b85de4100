// A kernel that multiplies with linalg.matmul on memrefs: the built-in lowering takes no linalg.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mm(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) kernel {
      linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%c : memref<4x4xf32>)
      gpu.return
    }
  }
}
