// CUDA printf as convert-gpu-to-nvvm lowers gpu.printf: vprintf with a stack argument buffer (NVVM).
module attributes {gpu.container_module} {
  gpu.module @printf_vprintf_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal constant @fmt("tid %d\0A\00") {addr_space = 0 : i32}
    llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
    llvm.func @hello() attributes {gpu.kernel, nvvm.kernel} {
      %one = llvm.mlir.constant(1 : i64) : i64
      %f = llvm.mlir.addressof @fmt : !llvm.ptr
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %buf = llvm.alloca %one x !llvm.struct<(i32)> : (i64) -> !llvm.ptr
      llvm.store %tid, %buf : i32, !llvm.ptr
      %r = llvm.call @vprintf(%f, %buf) : (!llvm.ptr, !llvm.ptr) -> i32
      llvm.return
    }
  }
}
