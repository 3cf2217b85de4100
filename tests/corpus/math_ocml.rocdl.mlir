// Device-library math: __ocml_{sin,exp,pow,sqrt,log}_f32 from ocml.bc plus __ockl_get_local_size (via rocdl.workgroup.dim and a direct call) from ockl.bc.
module attributes {gpu.container_module} {
  gpu.module @math_ocml_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @__ocml_sin_f32(f32) -> f32
    llvm.func @__ocml_exp_f32(f32) -> f32
    llvm.func @__ocml_pow_f32(f32, f32) -> f32
    llvm.func @__ocml_sqrt_f32(f32) -> f32
    llvm.func @__ocml_log_f32(f32) -> f32
    llvm.func @__ockl_get_local_size(i32) -> i64

    // out[i] = pow(exp(sin(x[i])), p) + sqrt(|x[i]|)
    llvm.func @wave_math(%n: i32, %p: f32, %x: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %bid = rocdl.workgroup.id.x : i32
      %bdim64 = rocdl.workgroup.dim.x : i64
      %bdim = llvm.trunc %bdim64 : i64 to i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s = llvm.call @__ocml_sin_f32(%v) : (f32) -> f32
      %e = llvm.call @__ocml_exp_f32(%s) : (f32) -> f32
      %pw = llvm.call @__ocml_pow_f32(%e, %p) : (f32, f32) -> f32
      %a = llvm.intr.fabs(%v) : (f32) -> f32
      %sq = llvm.call @__ocml_sqrt_f32(%a) : (f32) -> f32
      %r = llvm.fadd %pw, %sq : f32
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %po : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    // out[gid] = log(local_size(0) * local_size(1)), queried through ockl directly.
    llvm.func @log_group_size(%out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %sx = llvm.call @__ockl_get_local_size(%c0) : (i32) -> i64
      %sy = llvm.call @__ockl_get_local_size(%c1) : (i32) -> i64
      %prod = llvm.mul %sx, %sy : i64
      %f = llvm.uitofp %prod : i64 to f32
      %l = llvm.call @__ocml_log_f32(%f) : (f32) -> f32
      %tid = rocdl.workitem.id.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %l, %po : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
