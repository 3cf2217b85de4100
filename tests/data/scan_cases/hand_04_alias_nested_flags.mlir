#t = #nvvm.target<chip = "sm_80", flags = {"ptxas-cmd-options" = ["-v", "--opt-level=3"], fast}>
module attributes {gpu.container_module} {
  gpu.module @k [#t, #nvvm.target<chip = "sm_90", flags = {"ptxas-cmd-options" = ["-v"]}>] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
