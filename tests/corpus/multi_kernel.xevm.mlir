// Several kernels in one module after a non-kernel helper (spir_funccc): only the first gpu.kernel func
// (@scale, not the helper and not @shift) gets intel_reqd_sub_group_size 16 from upstream's serializer.
module attributes {gpu.container_module} {
  gpu.module @multi_kernel_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @helper(%v: f32, %s: f32) -> f32 {
      %m = llvm.fmul %v, %s : f32
      llvm.return %m : f32
    }
    llvm.func spir_kernelcc @scale(%p: !llvm.ptr<1>, %s: f32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %q : !llvm.ptr<1> -> f32
      %r = llvm.call spir_funccc @helper(%v, %s) : (f32, f32) -> f32
      llvm.store %r, %q : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @shift(%p: !llvm.ptr<1>, %k: i32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %v = llvm.load %q : !llvm.ptr<1> -> i32
      %r = llvm.shl %v, %k : i32
      llvm.store %r, %q : i32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @fill(%p: !llvm.ptr<1>, %v: i16) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16
      llvm.store %v, %q : i16, !llvm.ptr<1>
      llvm.return
    }
  }
}
