#targets = [#nvvm.target<chip = "sm_80">, #nvvm.target<chip = "sm_90">]
module attributes {gpu.container_module} {
  gpu.module @k #targets {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
