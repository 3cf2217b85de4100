// identity-chips: gfx942
// printf declared and called: upstream links ocml, ockl and opencl (opencl.bc's printf is optnone) (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @printf_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal constant @fmt("tid %d\0A\00") {addr_space = 4 : i32}
    llvm.func @printf(!llvm.ptr<4>, ...) -> i32
    llvm.func @say(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32
      %f = llvm.mlir.addressof @fmt : !llvm.ptr<4>
      %r = llvm.call @printf(%f, %tid) vararg(!llvm.func<i32 (ptr<4>, ...)>) : (!llvm.ptr<4>, i32) -> i32
      llvm.return
    }
  }
}
