// A generic op directly in the top module may define a symbol: here `main_kernel`, so outlining names the
// kernel `main_kernel_0`. The scan must leave this file to mlir-opt.
"llvm.mlir.global"() <{addr_space = 0 : i32, global_type = i32, linkage = #llvm.linkage<internal>, sym_name = "main_kernel", unnamed_addr = 0 : i64, value = 0 : i32, visibility_ = 0 : i64}> ({
}) : () -> ()
func.func @main(%n: index) {
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    gpu.terminator
  }
  return
}
