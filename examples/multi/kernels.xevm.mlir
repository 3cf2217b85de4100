// Several gpu.modules in one file (XeVM): kernels with a helper function, and a work-group reduction compiled
// for two chips (so its dumps are chip-qualified; LLVM 22 makes the same SPIR-V for both).
module attributes {gpu.container_module} {
  gpu.module @multi_kernel [#xevm.target<chip = "pvc", O = 3>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @helper(%v: f32, %s: f32) -> f32 {
      %m = llvm.fmul %v, %s : f32
      llvm.return %m : f32
    }
    llvm.func spir_kernelcc @scale(%p: !llvm.ptr<1>, %s: f32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %q : !llvm.ptr<1> -> f32
      %r = llvm.call spir_funccc @helper(%v, %s) : (f32, f32) -> f32
      llvm.store %r, %q : f32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @shift(%p: !llvm.ptr<1>, %k: i32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %v = llvm.load %q : !llvm.ptr<1> -> i32
      %r = llvm.shl %v, %k : i32
      llvm.store %r, %q : i32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @fill(%p: !llvm.ptr<1>, %v: i16) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %q = llvm.getelementptr %p[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i16
      llvm.store %v, %q : i16, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @reduce_sum [#xevm.target<chip = "pvc", O = 3>, #xevm.target<chip = "bmg", O = 3>] {
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
