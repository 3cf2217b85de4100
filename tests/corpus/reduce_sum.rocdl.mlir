// Block sum reduction: grid-stride loop, shared-memory (addrspace 3) tree reduction loop with rocdl.s.barrier, atomicrmw fadd; rocdl.grid.dim.x pulls in __ockl_get_num_groups (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @reduce_sum_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal @partials() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<256 x f32>

    // *result += sum(x[0..n)); fixed 256-wide workgroups.
    llvm.func @block_sum(%n: i32, %x: !llvm.ptr<1>, %result: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel, rocdl.flat_work_group_size = "256,256", rocdl.reqd_work_group_size = array<i32: 256, 1, 1>} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %c128 = llvm.mlir.constant(128 : i32) : i32
      %c256 = llvm.mlir.constant(256 : i32) : i32
      %zero = llvm.mlir.constant(0.0 : f32) : f32
      %buf = llvm.mlir.addressof @partials : !llvm.ptr<3>
      %tid = rocdl.workitem.id.x : i32
      %bid = rocdl.workgroup.id.x : i32
      %gdim64 = rocdl.grid.dim.x : i64
      %gdim = llvm.trunc %gdim64 : i64 to i32
      %0 = llvm.mul %bid, %c256 : i32
      %start = llvm.add %0, %tid : i32
      %stride = llvm.mul %gdim, %c256 : i32
      llvm.br ^gs(%start, %zero : i32, f32)
    ^gs(%i: i32, %acc: f32):
      %in = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %in, ^gs_body, ^gs_done
    ^gs_body:
      %i64 = llvm.sext %i : i32 to i64
      %p = llvm.getelementptr %x[%i64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %acc2 = llvm.fadd %acc, %v : f32
      %inext = llvm.add %i, %stride : i32
      llvm.br ^gs(%inext, %acc2 : i32, f32)
    ^gs_done:
      %mine = llvm.getelementptr %buf[0, %tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<256 x f32>
      llvm.store %acc, %mine : f32, !llvm.ptr<3>
      rocdl.s.barrier
      llvm.br ^tree(%c128 : i32)
    ^tree(%s: i32):
      %more = llvm.icmp "ugt" %s, %c0 : i32
      llvm.cond_br %more, ^tree_body, ^tree_done
    ^tree_body:
      %active = llvm.icmp "ult" %tid, %s : i32
      llvm.cond_br %active, ^combine, ^tree_sync
    ^combine:
      %j = llvm.add %tid, %s : i32
      %other = llvm.getelementptr %buf[0, %j] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<256 x f32>
      %a = llvm.load %mine : !llvm.ptr<3> -> f32
      %b = llvm.load %other : !llvm.ptr<3> -> f32
      %ab = llvm.fadd %a, %b : f32
      llvm.store %ab, %mine : f32, !llvm.ptr<3>
      llvm.br ^tree_sync
    ^tree_sync:
      rocdl.s.barrier
      %s2 = llvm.lshr %s, %c1 : i32
      llvm.br ^tree(%s2 : i32)
    ^tree_done:
      %is0 = llvm.icmp "eq" %tid, %c0 : i32
      llvm.cond_br %is0, ^commit, ^exit
    ^commit:
      %total = llvm.load %buf : !llvm.ptr<3> -> f32
      %old = llvm.atomicrmw fadd %result, %total syncscope("agent") monotonic : !llvm.ptr<1>, f32
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
