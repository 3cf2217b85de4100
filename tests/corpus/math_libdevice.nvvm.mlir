// Device-library math: __nv_sinf/__nv_expf/__nv_powf/__nv_sqrtf/__nv_log (f64) resolved from CUDA libdevice.10.bc.
module attributes {gpu.container_module} {
  gpu.module @math_libdevice_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @__nv_sinf(f32) -> f32
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @__nv_powf(f32, f32) -> f32
    llvm.func @__nv_sqrtf(f32) -> f32
    llvm.func @__nv_log(f64) -> f64

    // out[i] = pow(exp(sin(x[i])), p) + sqrt(|x[i]|)
    llvm.func @warp_math(%n: i32, %p: f32, %x: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s = llvm.call @__nv_sinf(%v) : (f32) -> f32
      %e = llvm.call @__nv_expf(%s) : (f32) -> f32
      %pw = llvm.call @__nv_powf(%e, %p) : (f32, f32) -> f32
      %a = llvm.intr.fabs(%v) : (f32) -> f32
      %sq = llvm.call @__nv_sqrtf(%a) : (f32) -> f32
      %r = llvm.fadd %pw, %sq : f32
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %po : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    // out[i] = log(x[i]) in double precision, one element per thread.
    llvm.func @log_f64(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      %v = llvm.load %px : !llvm.ptr<1> -> f64
      %l = llvm.call @__nv_log(%v) : (f64) -> f64
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      llvm.store %l, %po : f64, !llvm.ptr<1>
      llvm.return
    }
  }
}
