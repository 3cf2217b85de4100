// identity-chips: sm_90
// identity-variant: extra l=@DATA@/user2_nvptx.bc
// Target link = [...]: a user bitcode library linked before libdevice; it overrides __nv_sinf and its own helper needs __nv_expf from libdevice (NVVM).
module attributes {gpu.container_module} {
  gpu.module @link_user_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@, link = ["@DATA@/user_nvptx.bc"]>] {
    llvm.func @__nv_sinf(f32) -> f32
    llvm.func @__nv_cosf(f32) -> f32
    llvm.func @user_scale(f32) -> f32
    llvm.func @linked(%x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s = llvm.call @__nv_sinf(%v) : (f32) -> f32
      %c = llvm.call @__nv_cosf(%s) : (f32) -> f32
      %u = llvm.call @user_scale(%c) : (f32) -> f32
      llvm.store %u, %px : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
