// Block sum reduction: grid-stride loop, warp shuffles (nvvm.shfl.sync bfly), shared per-warp partials, barrier, atomicrmw fadd (NVVM).
module attributes {gpu.container_module} {
  gpu.module @reduce_sum_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal @warp_sums() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<32 x f32>

    // Butterfly all-reduce across a full warp.
    llvm.func internal @warp_allreduce(%v0: f32) -> f32 {
      %mask = llvm.mlir.constant(-1 : i32) : i32
      %clamp = llvm.mlir.constant(31 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %c32 = llvm.mlir.constant(32 : i32) : i32
      llvm.br ^loop(%c1, %v0 : i32, f32)
    ^loop(%off: i32, %acc: f32):
      %go = llvm.icmp "slt" %off, %c32 : i32
      llvm.cond_br %go, ^body, ^done
    ^body:
      %o = nvvm.shfl.sync bfly %mask, %acc, %off, %clamp : f32 -> f32
      %s = llvm.fadd %acc, %o : f32
      %off2 = llvm.shl %off, %c1 : i32
      llvm.br ^loop(%off2, %s : i32, f32)
    ^done:
      llvm.return %acc : f32
    }

    // *result += sum(x[0..n)); blockDim.x must be a multiple of 32 (<= 1024).
    llvm.func @block_sum(%n: i32, %x: !llvm.ptr<1>, %result: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 1024, 1, 1>} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c5 = llvm.mlir.constant(5 : i32) : i32
      %c31 = llvm.mlir.constant(31 : i32) : i32
      %zero = llvm.mlir.constant(0.0 : f32) : f32
      %sums = llvm.mlir.addressof @warp_sums : !llvm.ptr<3>
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %gdim = nvvm.read.ptx.sreg.nctaid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %start = llvm.add %0, %tid : i32
      %stride = llvm.mul %gdim, %bdim : i32
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
      %wsum = llvm.call @warp_allreduce(%acc) : (f32) -> f32
      %lane = llvm.and %tid, %c31 : i32
      %warp = llvm.lshr %tid, %c5 : i32
      %is_lane0 = llvm.icmp "eq" %lane, %c0 : i32
      llvm.cond_br %is_lane0, ^publish, ^sync
    ^publish:
      %slot = llvm.getelementptr %sums[0, %warp] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<32 x f32>
      llvm.store %wsum, %slot : f32, !llvm.ptr<3>
      llvm.br ^sync
    ^sync:
      nvvm.barrier0
      %is_warp0 = llvm.icmp "eq" %warp, %c0 : i32
      llvm.cond_br %is_warp0, ^final, ^exit
    ^final:
      %nwarps = llvm.lshr %bdim, %c5 : i32
      %has = llvm.icmp "ult" %lane, %nwarps : i32
      %slot2 = llvm.getelementptr %sums[0, %lane] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<32 x f32>
      %pv = llvm.load %slot2 : !llvm.ptr<3> -> f32
      %part = llvm.select %has, %pv, %zero : i1, f32
      %bsum = llvm.call @warp_allreduce(%part) : (f32) -> f32
      llvm.cond_br %is_lane0, ^commit, ^exit
    ^commit:
      %old = llvm.atomicrmw fadd %result, %bsum monotonic : !llvm.ptr<1>, f32
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
