// identity-chips: sm_90
// Target flags `fast` and `ftz`: accepted by #nvvm.target, but upstream's serializer never reads them (NVVM).
module attributes {gpu.container_module} {
  gpu.module @fast_ftz_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@, flags = {fast, ftz}>] {
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @exp_div(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %e = llvm.call @__nv_expf(%v) : (f32) -> f32
      %d = llvm.fdiv %e, %v : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %d, %py : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
