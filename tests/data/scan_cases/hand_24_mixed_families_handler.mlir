module attributes {gpu.container_module} {
  gpu.module @k <#gpu.select_object<#rocdl.target<chip = "gfx90a">>> [#nvvm.target<chip = "sm_80">, #rocdl.target<chip = "gfx90a">, #nvvm.target<chip = "sm_80", O = 1>] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel} { llvm.return }
  }
}
