module @empty {
}
gpu.module @k [#nvvm.target<chip = "sm_80">] {
  llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
}
