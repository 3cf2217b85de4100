module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_80">] attributes {my.note = "} { ] [ gpu.module @fake [#nvvm.target] {", my.dict = {a = 1, b = [2, 3]}} {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
