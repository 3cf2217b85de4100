// Large module: 34 elementwise kernels (f32 arith/intrinsics + i32 bit ops) in one gpu.module (NVVM); generated.
module attributes {gpu.container_module} {
  gpu.module @many_kernels_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @ew_add_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.fadd %v, %c : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_sub_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.fsub %v, %c : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_mul_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.fmul %v, %c : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_div_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.fdiv %v, %c : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_rem_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.frem %v, %c : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_neg_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.fneg %v : f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_abs_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.fabs(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_sqrt_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.sqrt(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_floor_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.floor(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_ceil_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.ceil(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_trunc_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.trunc(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_round_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.round(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_rint_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.rint(%v) : (f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_min_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.minnum(%v, %c) : (f32, f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_max_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.maxnum(%v, %c) : (f32, f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_copysign_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.copysign(%v, %c) : (f32, f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_fma_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.fma(%v, %c, %c) : (f32, f32, f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_fmuladd_nvvm(%n: i32, %c: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %r = llvm.intr.fmuladd(%v, %v, %c) : (f32, f32, f32) -> f32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_iadd_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.add %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_isub_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.sub %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_imul_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.mul %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_and_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.and %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_or_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.or %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_xor_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.xor %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_shl_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.shl %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_lshr_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.lshr %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_ashr_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.ashr %w, %k : i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_smin_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.smin(%w, %k) : (i32, i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_smax_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.smax(%w, %k) : (i32, i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_umin_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.umin(%w, %k) : (i32, i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_umax_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.umax(%w, %k) : (i32, i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_ctpop_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.ctpop(%w) : (i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_bswap_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.bswap(%w) : (i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }

    llvm.func @ew_bitrev_nvvm(%n: i32, %k: i32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %w = llvm.load %px : !llvm.ptr<1> -> i32
      %r = llvm.intr.bitreverse(%w) : (i32) -> i32
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %r, %py : i32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
