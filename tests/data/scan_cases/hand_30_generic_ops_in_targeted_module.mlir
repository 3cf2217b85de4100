// Generic-syntax ops inside a targeted gpu.module (as mlir-opt prints llvm.intr.ctlz): the scan reads it.
module attributes {gpu.container_module} {
  gpu.module @generic_inside [#nvvm.target<chip = "sm_80">] {
    "llvm.func"() <{function_type = !llvm.func<void (i32)>, sym_name = "helper", linkage = #llvm.linkage<external>, visibility_ = 0 : i64, CConv = #llvm.cconv<ccc>}> ({
    ^bb0(%x: i32):
      %lz = "llvm.intr.ctlz"(%x) <{is_zero_poison = false}> : (i32) -> i32
      llvm.return
    }) : () -> ()
    llvm.func @k(%x: i32) attributes {gpu.kernel, nvvm.kernel} {
      llvm.call @helper(%x) : (i32) -> ()
      llvm.return
    }
  }
}
