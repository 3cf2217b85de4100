// identity-chips: sm_90
// Device-side assert: __assertfail (resolved by ptxas), vprintf and llvm.intr.trap (NVVM).
module attributes {gpu.container_module} {
  gpu.module @assert_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.mlir.global internal constant @msg("x[i] >= 0\00") {addr_space = 0 : i32}
    llvm.mlir.global internal constant @file("assert.cu\00") {addr_space = 0 : i32}
    llvm.mlir.global internal constant @func("checked\00") {addr_space = 0 : i32}
    llvm.mlir.global internal constant @fmt("bad %d\0A\00") {addr_space = 0 : i32}
    llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) attributes {passthrough = ["noreturn"]}
    llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
    llvm.func @checked(%x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %idx = llvm.zext %tid : i32 to i64
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %px : !llvm.ptr<1> -> f32
      %zero = llvm.mlir.constant(0.0 : f32) : f32
      %ok = llvm.fcmp "oge" %v, %zero : f32
      llvm.cond_br %ok, ^good, ^bad
    ^bad:
      %one = llvm.mlir.constant(1 : i32) : i32
      %buf = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
      llvm.store %tid, %buf : i32, !llvm.ptr
      %f = llvm.mlir.addressof @fmt : !llvm.ptr
      %pr = llvm.call @vprintf(%f, %buf) : (!llvm.ptr, !llvm.ptr) -> i32
      %m = llvm.mlir.addressof @msg : !llvm.ptr
      %fl = llvm.mlir.addressof @file : !llvm.ptr
      %fn = llvm.mlir.addressof @func : !llvm.ptr
      %line = llvm.mlir.constant(12 : i32) : i32
      %sz = llvm.mlir.constant(1 : i64) : i64
      llvm.call @__assertfail(%m, %fl, %line, %fn, %sz) : (!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64) -> ()
      llvm.intr.trap
      llvm.unreachable
    ^good:
      %s = llvm.fmul %v, %v : f32
      llvm.store %s, %px : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
