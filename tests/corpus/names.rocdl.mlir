// identity-chips: gfx942
// Modules sharing a name prefix: @k, @k_1 and @k.v2 (dump stems k, k_1, k_v2; upstream temp files mlir-<name>-<triple>-<chip>) (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @k [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @k(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %c = llvm.mlir.constant(1.0 : f32) : f32
      llvm.store %c, %x : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @k_1 [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @k(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %c = llvm.mlir.constant(2.0 : f32) : f32
      llvm.store %c, %x : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @k.v2 [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @k(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %c = llvm.mlir.constant(3.0 : f32) : f32
      llvm.store %c, %x : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
