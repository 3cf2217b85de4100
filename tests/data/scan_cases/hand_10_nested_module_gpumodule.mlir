module attributes {gpu.container_module} {
  gpu.module @outer [#nvvm.target<chip = "sm_80">] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
  module @inner attributes {gpu.container_module} {
    gpu.module @deep [#nvvm.target<chip = "sm_80">] {
      llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
    }
  }
}
