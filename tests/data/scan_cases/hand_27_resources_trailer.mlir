module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_80">] {
    llvm.mlir.global internal constant @tbl(dense_resource<blob1> : tensor<4xi32>) {addr_space = 1 : i32} : !llvm.array<4 x i32>
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000030000000400000000"
    }
  }
#-}
