// Generic ops inside launch bodies (math.sqrt: the ops a body uses, for ROCDL's device libraries) and a
// generic terminator in the host function: two kernels, one counter.
func.func @f(%n: index) {
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    %c = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
    %s = "math.sqrt"(%c) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    gpu.terminator
  }
  "func.return"() : () -> ()
}
