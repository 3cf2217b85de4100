#t = #nvvm.target<
  chip = "sm_80",
  O = 3>
module attributes {gpu.container_module} {
  gpu.module @k [#t] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
