// The first kernel written in generic syntax (as some tools print ops), then one in custom syntax: upstream's
// serializer sets the sub-group size on the first llvm.func with gpu.kernel in op order, whatever its syntax.
module attributes {gpu.container_module} {
  gpu.module @generic_first_kernel_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    "llvm.func"() <{function_type = !llvm.func<void (ptr<1>)>, sym_name = "first", linkage = #llvm.linkage<external>, visibility_ = 0 : i64, CConv = #llvm.cconv<spir_kernelcc>}> ({
    ^bb0(%p: !llvm.ptr<1>):
      %v = llvm.load %p : !llvm.ptr<1> -> i32
      %lz = "llvm.intr.ctlz"(%v) <{is_zero_poison = false}> : (i32) -> i32
      llvm.store %lz, %p : i32, !llvm.ptr<1>
      llvm.return
    }) {gpu.kernel} : () -> ()
    llvm.func spir_kernelcc @second(%p: !llvm.ptr<1>) attributes {gpu.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.fadd %v, %v : f32
      llvm.store %w, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
