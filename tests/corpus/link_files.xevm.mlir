// linkFiles (XeVM's name for the attribute's link list): a SPIR-V bitcode helper library linked only-needed
// and internalized, then inlined at O3.
module attributes {gpu.container_module} {
  gpu.module @link_files_xevm [#xevm.target<chip = "@CHIP@", O = @O@, linkFiles = ["@DATA@/xevm_helpers.bc"]>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @helper_scale(f32, i32) -> f32
    llvm.func spir_kernelcc @scaled(%p: !llvm.ptr<1>, %k: i32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %q : !llvm.ptr<1> -> f32
      %r = llvm.call spir_funccc @helper_scale(%v, %k) : (f32, i32) -> f32
      llvm.store %r, %q : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
