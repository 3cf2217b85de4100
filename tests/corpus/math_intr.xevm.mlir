// LLVM math intrinsics (f32 and f64) that the SPIR-V back end maps to OpenCL.std extended instructions, plus
// an OpenCL builtin called by its mangled name (_Z5rsqrtf).
module attributes {gpu.container_module} {
  gpu.module @math_intr_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z5rsqrtf(f32) -> f32 attributes {no_unwind, will_return}
    llvm.func spir_kernelcc @math32(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %a = llvm.intr.fabs(%v) : (f32) -> f32
      %s = llvm.intr.sqrt(%a) : (f32) -> f32
      %e = llvm.intr.exp(%v) : (f32) -> f32
      %l = llvm.intr.log(%e) : (f32) -> f32
      %sn = llvm.intr.sin(%v) : (f32) -> f32
      %cs = llvm.intr.cos(%v) : (f32) -> f32
      %f = llvm.intr.fma(%sn, %cs, %s) : (f32, f32, f32) -> f32
      %p = llvm.intr.pow(%a, %l) : (f32, f32) -> f32
      %fl = llvm.intr.floor(%p) : (f32) -> f32
      %mx = llvm.intr.maxnum(%f, %fl) : (f32, f32) -> f32
      %mn = llvm.intr.minnum(%mx, %e) : (f32, f32) -> f32
      %cp = llvm.intr.copysign(%mn, %v) : (f32, f32) -> f32
      %r = llvm.call spir_funccc @_Z5rsqrtf(%a) : (f32) -> f32
      %t = llvm.fadd %cp, %r {fastmathFlags = #llvm.fastmath<contract>} : f32
      %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %t, %py : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @math64(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      %v = llvm.load %px : !llvm.ptr<1> -> f64
      %s = llvm.intr.sqrt(%v) : (f64) -> f64
      %e = llvm.intr.exp2(%s) : (f64) -> f64
      %l = llvm.intr.log10(%e) : (f64) -> f64
      %c = llvm.intr.ceil(%l) : (f64) -> f64
      %r = llvm.intr.round(%c) : (f64) -> f64
      %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      llvm.store %r, %py : f64, !llvm.ptr<1>
      llvm.return
    }
  }
}
