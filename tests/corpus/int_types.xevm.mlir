// Integer and float types: i8/i16/i32/i64 arithmetic, signed/unsigned div and rem, shifts, ctpop/ctlz/bswap,
// select, f16 <-> f32 <-> f64 conversions and fptosi/uitofp.
module attributes {gpu.container_module} {
  gpu.module @int_types_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_kernelcc @ints(%a8: !llvm.ptr<1>, %a16: !llvm.ptr<1>, %a32: !llvm.ptr<1>, %a64: !llvm.ptr<1>, %d: i32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c3 = llvm.mlir.constant(3 : i8) : i8
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %p8 = llvm.getelementptr %a8[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
      %p16 = llvm.getelementptr %a16[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16
      %p32 = llvm.getelementptr %a32[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %p64 = llvm.getelementptr %a64[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i64
      %v8 = llvm.load %p8 : !llvm.ptr<1> -> i8
      %v16 = llvm.load %p16 : !llvm.ptr<1> -> i16
      %v32 = llvm.load %p32 : !llvm.ptr<1> -> i32
      %v64 = llvm.load %p64 : !llvm.ptr<1> -> i64
      %m8 = llvm.mul %v8, %c3 : i8
      %x16 = llvm.sext %m8 : i8 to i16
      %s16 = llvm.add %x16, %v16 : i16
      %z32 = llvm.zext %s16 : i16 to i32
      %q = llvm.sdiv %v32, %d : i32
      %r = llvm.urem %z32, %d : i32
      %pc = llvm.intr.ctpop(%q) : (i32) -> i32
      %lz = "llvm.intr.ctlz"(%r) <{is_zero_poison = false}> : (i32) -> i32
      %bs = llvm.intr.bswap(%pc) : (i32) -> i32
      %sh = llvm.ashr %bs, %lz : i32
      %cmp = llvm.icmp "sgt" %sh, %q : i32
      %sel = llvm.select %cmp, %sh, %q : i1, i32
      %w = llvm.sext %sel : i32 to i64
      %u = llvm.udiv %v64, %w : i64
      %o = llvm.xor %u, %v64 : i64
      %t32 = llvm.trunc %o : i64 to i32
      %t16 = llvm.trunc %t32 : i32 to i16
      %t8 = llvm.trunc %t16 : i16 to i8
      llvm.store %t8, %p8 : i8, !llvm.ptr<1>
      llvm.store %t16, %p16 : i16, !llvm.ptr<1>
      llvm.store %t32, %p32 : i32, !llvm.ptr<1>
      llvm.store %o, %p64 : i64, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @floats(%h: !llvm.ptr<1>, %f: !llvm.ptr<1>, %d: !llvm.ptr<1>, %n: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %ph = llvm.getelementptr %h[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
      %pf = llvm.getelementptr %f[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %pd = llvm.getelementptr %d[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      %pn = llvm.getelementptr %n[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %vh = llvm.load %ph : !llvm.ptr<1> -> f16
      %vf = llvm.load %pf : !llvm.ptr<1> -> f32
      %vd = llvm.load %pd : !llvm.ptr<1> -> f64
      %eh = llvm.fpext %vh : f16 to f32
      %sf = llvm.fmul %eh, %vf : f32
      %ed = llvm.fpext %sf : f32 to f64
      %sd = llvm.fdiv %vd, %ed : f64
      %tf = llvm.fptrunc %sd : f64 to f32
      %th = llvm.fptrunc %tf : f32 to f16
      %ni = llvm.fptosi %tf : f32 to i32
      %nu = llvm.uitofp %ni : i32 to f64
      %neg = llvm.fneg %nu : f64
      %lt = llvm.fcmp "olt" %neg, %vd : f64
      %res = llvm.select %lt, %neg, %sd : i1, f64
      llvm.store %th, %ph : f16, !llvm.ptr<1>
      llvm.store %tf, %pf : f32, !llvm.ptr<1>
      llvm.store %res, %pd : f64, !llvm.ptr<1>
      llvm.store %ni, %pn : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
