// One gpu.module carrying two NVVM targets (sm_80 + sm_90): gpu.binary gets one object per target; only O is a placeholder.
module attributes {gpu.container_module} {
  gpu.module @vec_scale_multi_nvvm [#nvvm.target<chip = "sm_80", O = @O@>, #nvvm.target<chip = "sm_90", O = @O@>] {
    // x[i] *= s, vectorized as <4 x f32> per thread.
    llvm.func @vec4_scale(%n4: i32, %s: f32, %x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n4 : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %p = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<4xf32>
      %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
      %u = llvm.mlir.undef : vector<4xf32>
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %ins = llvm.insertelement %s, %u[%c0 : i32] : vector<4xf32>
      %splat = llvm.shufflevector %ins, %u [0, 0, 0, 0] : vector<4xf32>
      %r = llvm.fmul %v, %splat : vector<4xf32>
      llvm.store %r, %p {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
