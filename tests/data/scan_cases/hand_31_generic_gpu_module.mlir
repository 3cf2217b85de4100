// A gpu.module written in generic syntax: the scan must not miss it (it leaves the file to mlir-opt).
module attributes {gpu.container_module} {
  gpu.module @custom [#nvvm.target<chip = "sm_80">] {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
  "gpu.module"() <{sym_name = "generic", targets = [#nvvm.target<chip = "sm_80">]}> ({
    llvm.func @g() attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }) : () -> ()
}
