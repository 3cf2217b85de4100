// leading comment
#base = #nvvm.target<chip = "sm_80", O = 1> // trailing comment with gpu.module @x [#nvvm.target] {
#alias2 = #base
!ty = f32
module attributes {gpu.container_module} {
  gpu.module @k [#alias2] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
