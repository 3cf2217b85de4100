// flags = {wave64} plus features = "+wavefrontsize64" on gfx1100: wave64 code and __oclc_wavefrontsize64 = 1 (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @wave64_features_gfx1100_rocdl [#rocdl.target<chip = "gfx1100", O = @O@, features = "+wavefrontsize64", flags = {wave64}>] {
    llvm.func @__ocml_sqrt_f32(f32) -> f32
    llvm.func @__ocml_exp_f32(f32) -> f32
    llvm.func @__ocml_log_f32(f32) -> f32
    llvm.func @__ockl_activelane_u32() -> i32

    // out[i] = sqrt(x) + exp(x) / log(x) + (float)activelane()
    llvm.func @ocml_mix(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s = llvm.call @__ocml_sqrt_f32(%v) : (f32) -> f32
      %e = llvm.call @__ocml_exp_f32(%v) : (f32) -> f32
      %l = llvm.call @__ocml_log_f32(%v) : (f32) -> f32
      %d = llvm.fdiv %e, %l : f32
      %a = llvm.fadd %s, %d : f32
      %lane = llvm.call @__ockl_activelane_u32() : () -> i32
      %lf = llvm.uitofp %lane : i32 to f32
      %r = llvm.fadd %a, %lf : f32
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %po : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
