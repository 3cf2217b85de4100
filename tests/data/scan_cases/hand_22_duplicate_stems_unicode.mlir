gpu.module @"a€" [#nvvm.target<chip = "sm_80">] {
  llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
}
gpu.module @"a£" [#nvvm.target<chip = "sm_80">] {
  llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
}
