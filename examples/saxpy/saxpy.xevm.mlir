// saxpy for XeVM (SPIR-V for Intel GPUs); main.c links the object and checks the embedded binary.
module attributes {gpu.container_module} {
  gpu.module @saxpy_module [#xevm.target<chip = "pvc", O = 3>] {
    llvm.func spir_funccc @_Z12get_local_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z14get_local_sizej(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z12get_group_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_kernelcc @saxpy(%n: i64, %a: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %bid = llvm.call spir_funccc @_Z12get_group_idj(%c0) : (i32) -> i64
      %bdim = llvm.call spir_funccc @_Z14get_local_sizej(%c0) : (i32) -> i64
      %tid = llvm.call spir_funccc @_Z12get_local_idj(%c0) : (i32) -> i64
      %0 = llvm.mul %bid, %bdim : i64
      %i = llvm.add %0, %tid : i64
      %inb = llvm.icmp "slt" %i, %n : i64
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %vx = llvm.load %px : !llvm.ptr<1> -> f32
      %vy = llvm.load %py : !llvm.ptr<1> -> f32
      %ax = llvm.fmul %a, %vx : f32
      %r = llvm.fadd %ax, %vy : f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
