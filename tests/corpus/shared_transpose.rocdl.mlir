// Shared memory (addrspace 3 llvm.mlir.global) + rocdl.barrier: 32x32 tiled matrix transpose, 32x8 thread blocks.
module attributes {gpu.container_module} {
  gpu.module @shared_transpose_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x array<33 x f32>>

    // out[x][y] = in[y][x] for an n x n matrix, n a multiple of 32.
    llvm.func @transpose32(%n: i32, %in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel, rocdl.flat_work_group_size = "256,256", rocdl.reqd_work_group_size = array<i32: 32, 8, 1>} {
      %c8 = llvm.mlir.constant(8 : i32) : i32
      %c32 = llvm.mlir.constant(32 : i32) : i32
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %tile = llvm.mlir.addressof @tile : !llvm.ptr<3>
      %tx = rocdl.workitem.id.x : i32
      %ty = rocdl.workitem.id.y : i32
      %bx = rocdl.workgroup.id.x : i32
      %by = rocdl.workgroup.id.y : i32
      %bx32 = llvm.mul %bx, %c32 : i32
      %by32 = llvm.mul %by, %c32 : i32
      %gx = llvm.add %bx32, %tx : i32
      llvm.br ^load(%c0 : i32)
    ^load(%j: i32):
      %lc = llvm.icmp "slt" %j, %c32 : i32
      llvm.cond_br %lc, ^load_body, ^sync
    ^load_body:
      %r = llvm.add %ty, %j : i32
      %gy = llvm.add %by32, %r : i32
      %row = llvm.mul %gy, %n : i32
      %gi = llvm.add %row, %gx : i32
      %gi64 = llvm.sext %gi : i32 to i64
      %src = llvm.getelementptr %in[%gi64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %src : !llvm.ptr<1> -> f32
      %dst = llvm.getelementptr %tile[0, %r, %tx] : (!llvm.ptr<3>, i32, i32) -> !llvm.ptr<3>, !llvm.array<32 x array<33 x f32>>
      llvm.store %v, %dst : f32, !llvm.ptr<3>
      %jn = llvm.add %j, %c8 : i32
      llvm.br ^load(%jn : i32)
    ^sync:
      rocdl.barrier
      %ox = llvm.add %by32, %tx : i32
      llvm.br ^store(%c0 : i32)
    ^store(%k: i32):
      %sc = llvm.icmp "slt" %k, %c32 : i32
      llvm.cond_br %sc, ^store_body, ^exit
    ^store_body:
      %r2 = llvm.add %ty, %k : i32
      %src2 = llvm.getelementptr %tile[0, %tx, %r2] : (!llvm.ptr<3>, i32, i32) -> !llvm.ptr<3>, !llvm.array<32 x array<33 x f32>>
      %v2 = llvm.load %src2 : !llvm.ptr<3> -> f32
      %oy = llvm.add %bx32, %r2 : i32
      %orow = llvm.mul %oy, %n : i32
      %oi = llvm.add %orow, %ox : i32
      %oi64 = llvm.sext %oi : i32 to i64
      %dst2 = llvm.getelementptr %out[%oi64] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %v2, %dst2 : f32, !llvm.ptr<1>
      %kn = llvm.add %k, %c8 : i32
      llvm.br ^store(%kn : i32)
    ^exit:
      llvm.return
    }
  }
}
