// Generic ops in a global's initializer region and a launch inside a generic scf.execute_region: nested, so the
// scan reads them; the launch's kernel is uniqued against @main_kernel.
module {
  llvm.mlir.global internal @g() {addr_space = 0 : i32} : i32 {
    %0 = "llvm.mlir.constant"() <{value = 0 : i32}> : () -> i32
    "llvm.return"(%0) : (i32) -> ()
  }
  func.func @main(%n: index) {
    "scf.execute_region"() ({
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
                 threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
        gpu.terminator
      }
      "scf.yield"() : () -> ()
    }) : () -> ()
    return
  }
  func.func @main_kernel() {
    return
  }
}
