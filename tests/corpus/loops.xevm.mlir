// Loops through block arguments: a strided dot product (f64 accumulator) and an i32 polynomial (Horner) loop.
module attributes {gpu.container_module} {
  gpu.module @loops_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z15get_global_sizej(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_kernelcc @dot(%n: i64, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %zero = llvm.mlir.constant(0.0 : f64) : f64
      %gid = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %gsz = llvm.call spir_funccc @_Z15get_global_sizej(%c0) : (i32) -> i64
      llvm.br ^head(%gid, %zero : i64, f64)
    ^head(%i: i64, %acc: f64):
      %more = llvm.icmp "slt" %i, %n : i64
      llvm.cond_br %more, ^body, ^done
    ^body:
      %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %vx = llvm.load %px : !llvm.ptr<1> -> f32
      %vy = llvm.load %py : !llvm.ptr<1> -> f32
      %dx = llvm.fpext %vx : f32 to f64
      %dy = llvm.fpext %vy : f32 to f64
      %m = llvm.fmul %dx, %dy : f64
      %acc2 = llvm.fadd %acc, %m : f64
      %next = llvm.add %i, %gsz : i64
      llvm.br ^head(%next, %acc2 : i64, f64)
    ^done:
      %po = llvm.getelementptr %out[%gid] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      llvm.store %acc, %po : f64, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @horner(%coef: !llvm.ptr<1>, %deg: i32, %xs: !llvm.ptr<1>, %ys: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %gid = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %px = llvm.getelementptr %xs[%gid] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %x = llvm.load %px : !llvm.ptr<1> -> i32
      llvm.br ^head(%deg, %c0 : i32, i32)
    ^head(%k: i32, %acc: i32):
      %ge = llvm.icmp "sge" %k, %c0 : i32
      llvm.cond_br %ge, ^body, ^done
    ^body:
      %pc = llvm.getelementptr %coef[%k] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      %c = llvm.load %pc : !llvm.ptr<1> -> i32
      %t = llvm.mul %acc, %x : i32
      %acc2 = llvm.add %t, %c : i32
      %k2 = llvm.sub %k, %c1 : i32
      llvm.br ^head(%k2, %acc2 : i32, i32)
    ^done:
      %py = llvm.getelementptr %ys[%gid] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      llvm.store %acc, %py : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
