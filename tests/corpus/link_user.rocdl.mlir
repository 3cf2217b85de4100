// identity-chips: gfx942
// Target link = [...]: a user bitcode library whose helper calls __ocml_exp_f32. @link_only_user never calls ocml itself, so upstream links no ocml and the reference stays undefined in the HSACO; @link_with_ocml calls ocml too, so ocml (after the user library) resolves it (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @link_only_user [#rocdl.target<chip = "@CHIP@", O = @O@, link = ["@DATA@/user_amdgcn.bc"]>] {
    llvm.func @user_scale(f32) -> f32
    llvm.func @scaled(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %u = llvm.call @user_scale(%v) : (f32) -> f32
      llvm.store %u, %px : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @link_with_ocml [#rocdl.target<chip = "@CHIP@", O = @O@, link = ["@DATA@/user_amdgcn.bc"]>] {
    llvm.func @user_scale(f32) -> f32
    llvm.func @__ocml_sqrt_f32(f32) -> f32
    llvm.func @scaled_sqrt(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %s = llvm.call @__ocml_sqrt_f32(%v) : (f32) -> f32
      %u = llvm.call @user_scale(%s) : (f32) -> f32
      llvm.store %u, %px : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
