// Several kernels sharing non-kernel device helpers (internal + external linkage llvm.func) in one gpu.module (NVVM).
module attributes {gpu.container_module} {
  gpu.module @multi_kernel_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
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
}
