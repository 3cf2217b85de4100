// Work-group memory (addrspace 3 global) tree reduction with OpenCL barrier(CLK_LOCAL_MEM_FENCE) and the SPIR-V
// friendly __spirv_ControlBarrier(Workgroup, Workgroup, WorkgroupMemory|SequentiallyConsistent).
module attributes {gpu.container_module} {
  gpu.module @shared_reduce_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<256 x f32>
    llvm.func spir_funccc @_Z12get_local_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z12get_group_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z7barrierj(i32) attributes {convergent, no_unwind, will_return}
    llvm.func spir_funccc @_Z22__spirv_ControlBarrieriii(i32, i32, i32) attributes {convergent, no_unwind, will_return}
    llvm.func spir_kernelcc @block_sum(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %c2 = llvm.mlir.constant(2 : i32) : i32
      %sem = llvm.mlir.constant(272 : i32) : i32
      %c128 = llvm.mlir.constant(128 : i64) : i64
      %c256 = llvm.mlir.constant(256 : i64) : i64
      %c0l = llvm.mlir.constant(0 : i64) : i64
      %one = llvm.mlir.constant(1 : i64) : i64
      %tid = llvm.call spir_funccc @_Z12get_local_idj(%c0) : (i32) -> i64
      %bid = llvm.call spir_funccc @_Z12get_group_idj(%c0) : (i32) -> i64
      %base = llvm.mul %bid, %c256 : i64
      %gi = llvm.add %base, %tid : i64
      %pin = llvm.getelementptr %in[%gi] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %pin : !llvm.ptr<1> -> f32
      %tile = llvm.mlir.addressof @tile : !llvm.ptr<3>
      %slot = llvm.getelementptr %tile[0, %tid] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<256 x f32>
      llvm.store %v, %slot : f32, !llvm.ptr<3>
      llvm.call spir_funccc @_Z7barrierj(%c1) {convergent} : (i32) -> ()
      llvm.br ^head(%c128 : i64)
    ^head(%s: i64):
      %go = llvm.icmp "ugt" %s, %c0l : i64
      llvm.cond_br %go, ^step, ^done
    ^step:
      %lt = llvm.icmp "ult" %tid, %s : i64
      llvm.cond_br %lt, ^add, ^sync
    ^add:
      %j = llvm.add %tid, %s : i64
      %other = llvm.getelementptr %tile[0, %j] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<256 x f32>
      %a = llvm.load %slot : !llvm.ptr<3> -> f32
      %b = llvm.load %other : !llvm.ptr<3> -> f32
      %sum = llvm.fadd %a, %b : f32
      llvm.store %sum, %slot : f32, !llvm.ptr<3>
      llvm.br ^sync
    ^sync:
      llvm.call spir_funccc @_Z22__spirv_ControlBarrieriii(%c2, %c2, %sem) {convergent} : (i32, i32, i32) -> ()
      %s2 = llvm.lshr %s, %one : i64
      llvm.br ^head(%s2 : i64)
    ^done:
      %first = llvm.icmp "eq" %tid, %c0l : i64
      llvm.cond_br %first, ^write, ^exit
    ^write:
      %r = llvm.load %slot : !llvm.ptr<3> -> f32
      %po = llvm.getelementptr %out[%bid] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %po : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
