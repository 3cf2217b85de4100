// Generic syntax nested in a function and in a launch's body (mlir-opt prints some ops so, and upstream's
// tests write terminators so): nothing in it can define a symbol of the top module, so the scan reads it.
func.func @main() {
  %n = "arith.constant"() <{value = 4 : index}> : () -> index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    %t = arith.index_cast %tx : index to i32
    %v = "scf.execute_region"() ({
      %s = "arith.addi"(%t, %t) : (i32, i32) -> i32
      "scf.yield"(%s) : (i32) -> ()
    }) : () -> i32
    gpu.terminator
  }
  "func.return"() : () -> ()
}
