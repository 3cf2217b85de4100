// dense_resource-initialized constant global in a gpu.module (blob in the dialect_resources trailer) used as a lookup table (ROCDL, lookup table in addrspace 4 = constant).
module attributes {gpu.container_module} {
  gpu.module @dense_lut_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal constant @lut_rocdl(dense_resource<lut_pow2_rocdl> : tensor<8xf32>) {addr_space = 4 : i32, alignment = 16 : i64} : !llvm.array<8 x f32>

    // out[i] = lut[code[i] & 7] * x[i]
    llvm.func @lut_scale(%n: i32, %code: !llvm.ptr<1>, %x: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel, rocdl.flat_work_group_size = "128,128"} {
      %tid = rocdl.workitem.id.x : i32
      %bid = rocdl.workgroup.id.x : i32
      %bdim = llvm.mlir.constant(128 : i32) : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %c7 = llvm.mlir.constant(7 : i32) : i32
      %lut = llvm.mlir.addressof @lut_rocdl : !llvm.ptr<4>
      %idx = llvm.sext %i : i32 to i64
      %pc = llvm.getelementptr %code[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %c = llvm.load %pc : !llvm.ptr<1> -> i32
      %k = llvm.and %c, %c7 : i32
      %pl = llvm.getelementptr %lut[0, %k] : (!llvm.ptr<4>, i32) -> !llvm.ptr<4>, !llvm.array<8 x f32>
      %scale = llvm.load %pl : !llvm.ptr<4> -> f32
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.fmul %v, %scale : f32
      %po = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %po : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}

{-#
  dialect_resources: {
    builtin: {
      lut_pow2_rocdl: "0x04000000000000000000003E0000803E0000003F0000803F000000400000804000000041"
    }
  }
#-}
