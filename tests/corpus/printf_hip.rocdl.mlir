// HIP printf as convert-gpu-to-rocdl{runtime=HIP} lowers it: ockl hostcall (__ockl_hostcall_internal is optnone).
module attributes {gpu.container_module} {
  gpu.module @printf_hip_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal constant @fmt("hello\0A\00") {addr_space = 0 : i32}
    llvm.func @__ockl_printf_begin(i64) -> i64
    llvm.func @__ockl_printf_append_string_n(i64, !llvm.ptr, i64, i32) -> i64
    llvm.func @hello() attributes {gpu.kernel, rocdl.kernel} {
      %z = llvm.mlir.constant(0 : i64) : i64
      %last = llvm.mlir.constant(1 : i32) : i32
      %len = llvm.mlir.constant(7 : i64) : i64
      %f = llvm.mlir.addressof @fmt : !llvm.ptr
      %d0 = llvm.call @__ockl_printf_begin(%z) : (i64) -> i64
      %d1 = llvm.call @__ockl_printf_append_string_n(%d0, %f, %len, %last) : (i64, !llvm.ptr, i64, i32) -> i64
      llvm.return
    }
  }
}
