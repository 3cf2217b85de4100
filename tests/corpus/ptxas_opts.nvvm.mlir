// identity-chips: sm_90
// identity-variant: opts opts=-v --extensible-whole-program
// identity-variant: quoted opts="--maxrregcount=40 -v"
// identity-variant: escaped opts=--maxrregcount\=40
// Target flags: "ptxas-cmd-options" reach ptxas after -arch/<ptx>/-o/--opt-level and after the pass's opts= (NVVM).
module attributes {gpu.container_module} {
  gpu.module @ptxas_opts_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@, flags = {"ptxas-cmd-options" = ["--maxrregcount=24", "--def-load-cache=cg"]}>] {
    llvm.func @saxpy_regs(%n: i32, %a: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
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
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %vx = llvm.load %px : !llvm.ptr<1> -> f32
      %vy = llvm.load %py : !llvm.ptr<1> -> f32
      %m = llvm.fmul %a, %vx : f32
      %r = llvm.fadd %m, %vy : f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
