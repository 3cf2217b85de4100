func.func @first() {
  return
}
"func.func"() <{function_type = (index) -> (), sym_name = "second"}> ({
^bb0(%n: index):
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    gpu.terminator
  }
  "func.return"() : () -> ()
}) : () -> ()
