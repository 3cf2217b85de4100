// Several gpu.modules in one file (NVVM): elementwise kernels with helpers, a tiled transpose with
// shared memory, and a reduction compiled for two chips (so its dumps are chip-qualified).
module attributes {gpu.container_module} {
  gpu.module @multi_kernel [#nvvm.target<chip = "sm_80", O = 3>] {
    // Global linear index: ctaid.x * ntid.x + tid.x
    llvm.func internal @global_id() -> i32 {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %1 = llvm.add %0, %tid : i32
      llvm.return %1 : i32
    }
    // clamp(x, lo, hi), kept out of line at O0.
    llvm.func @clampf(%x: f32, %lo: f32, %hi: f32) -> f32 {
      %0 = llvm.intr.maxnum(%x, %lo) : (f32, f32) -> f32
      %1 = llvm.intr.minnum(%0, %hi) : (f32, f32) -> f32
      llvm.return %1 : f32
    }
    llvm.func internal @elem_ptr(%base: !llvm.ptr<1>, %i: i32) -> !llvm.ptr<1> {
      %idx = llvm.sext %i : i32 to i64
      %p = llvm.getelementptr %base[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.return %p : !llvm.ptr<1>
    }

    llvm.func @relu6(%n: i32, %x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %i = llvm.call @global_id() : () -> i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %p = llvm.call @elem_ptr(%x, %i) : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %lo = llvm.mlir.constant(0.0 : f32) : f32
      %hi = llvm.mlir.constant(6.0 : f32) : f32
      %r = llvm.call @clampf(%v, %lo, %hi) : (f32, f32, f32) -> f32
      llvm.store %r, %p : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @scale_add(%n: i32, %s: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %z: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %i = llvm.call @global_id() : () -> i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %px = llvm.call @elem_ptr(%x, %i) : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>
      %py = llvm.call @elem_ptr(%y, %i) : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>
      %pz = llvm.call @elem_ptr(%z, %i) : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>
      %vx = llvm.load %px : !llvm.ptr<1> -> f32
      %vy = llvm.load %py : !llvm.ptr<1> -> f32
      %r = llvm.intr.fma(%s, %vx, %vy) : (f32, f32, f32) -> f32
      llvm.store %r, %pz : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @fill(%n: i32, %v: f32, %x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
      %i = llvm.call @global_id() : () -> i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %p = llvm.call @elem_ptr(%x, %i) : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>
      llvm.store %v, %p : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
  gpu.module @shared_transpose [#nvvm.target<chip = "sm_80", O = 3>] {
    llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32 x array<33 x f32>>

    // out[x][y] = in[y][x] for an n x n matrix, n a multiple of 32.
    llvm.func @transpose32(%n: i32, %in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel, nvvm.reqntid = array<i32: 32, 8, 1>} {
      %c8 = llvm.mlir.constant(8 : i32) : i32
      %c32 = llvm.mlir.constant(32 : i32) : i32
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %tile = llvm.mlir.addressof @tile : !llvm.ptr<3>
      %tx = nvvm.read.ptx.sreg.tid.x : i32
      %ty = nvvm.read.ptx.sreg.tid.y : i32
      %bx = nvvm.read.ptx.sreg.ctaid.x : i32
      %by = nvvm.read.ptx.sreg.ctaid.y : i32
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
      nvvm.barrier0
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
  gpu.module @reduce_sum [#nvvm.target<chip = "sm_80", O = 3>, #nvvm.target<chip = "sm_90", O = 3>] {
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
