"builtin.module"() ({
  "gpu.module"() <{sym_name = "gk", targets = [#nvvm.target<chip = "sm_80">]}> ({
    "llvm.func"() <{function_type = !llvm.func<void ()>, sym_name = "kernel", CConv = #llvm.cconv<ccc>, linkage = #llvm.linkage<external>, visibility_ = 0 : i64}> ({
      "llvm.return"() : () -> ()
    }) {gpu.kernel, nvvm.kernel} : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()
