// Ünïcödé comment: gpu.module @commented [#nvvm.target] { } — “quotes” 🚀
module attributes {gpu.container_module, my.s = "naïve — gpu.module @str [#nvvm.target] {"} {
  // 日本語のコメント {{{ 
  gpu.module @"kérnel_ü" [#nvvm.target<chip = "sm_80">] attributes {note = "ü}ü"} {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
  gpu.module @plain [#nvvm.target<chip = "sm_80">] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
