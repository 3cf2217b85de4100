gpu.module @first [#nvvm.target<chip = "sm_80">] {
  llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
}

// -----

gpu.module @second [#nvvm.target<chip = "sm_80">] {
  llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
}
