// identity-chips: gfx942
// abi = "0x1F4": upstream reads abi with StringRef::getAsInteger(radix 0), so hex means 500 (a non-number means 600, "0500" octal 320); one module with ocml+ockl, one with no library (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @abi500_libs [#rocdl.target<chip = "@CHIP@", O = @O@, abi = "0x1F4">] {
    llvm.func @__ockl_get_local_size(i32) -> i64
    llvm.func @__ocml_exp_f32(f32) -> f32
    llvm.func @group_exp(%out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %sx = llvm.call @__ockl_get_local_size(%c0) : (i32) -> i64
      %f = llvm.uitofp %sx : i64 to f32
      %e = llvm.call @__ocml_exp_f32(%f) : (f32) -> f32
      %tid = rocdl.workitem.id.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %e, %po : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @abi500_nolibs [#rocdl.target<chip = "@CHIP@", O = @O@, abi = "0x1F4">] {
    llvm.func @group_dim(%out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %d = rocdl.workgroup.dim.x : i64
      %tid = rocdl.workitem.id.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i64
      llvm.store %d, %po : i64, !llvm.ptr<1>
      llvm.return
    }
  }
}
