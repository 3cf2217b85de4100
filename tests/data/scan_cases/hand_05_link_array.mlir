module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_80", link = ["/tmp/upstream_tests/empty_lib.bc"]>] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
