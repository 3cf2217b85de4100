// identity-chips: gfx942
// An extern_weak declaration of __ocml_exp_f32: upstream picks device libraries only from external-linkage declarations, so no ocml and no __oclc_* constants (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @extern_weak_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func extern_weak @__ocml_exp_f32(f32) -> f32
    llvm.func @weak_exp(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %v = llvm.load %x : !llvm.ptr<1> -> f32
      %e = llvm.call @__ocml_exp_f32(%v) : (f32) -> f32
      llvm.store %e, %x : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
