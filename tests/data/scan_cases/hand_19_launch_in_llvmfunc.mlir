func.func @first() {
  return
}
llvm.func @second(%m: i64) {
  %n = arith.index_cast %m : i64 to index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    gpu.terminator
  }
  llvm.return
}
