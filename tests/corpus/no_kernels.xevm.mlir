// A module without kernels: an exported device function and a constant table (no sub-group size is set).
module attributes {gpu.container_module} {
  gpu.module @no_kernels_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal constant @lut(dense<[1.0, 2.0, 4.0, 8.0]> : tensor<4xf32>) {addr_space = 1 : i32} : !llvm.array<4 x f32>
    llvm.func spir_funccc @lookup(%i: i64) -> f32 {
      %t = llvm.mlir.addressof @lut : !llvm.ptr<1>
      %p = llvm.getelementptr %t[0, %i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, !llvm.array<4 x f32>
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      llvm.return %v : f32
    }
  }
}
