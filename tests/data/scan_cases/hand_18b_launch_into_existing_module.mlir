module attributes {gpu.container_module} {
  gpu.module @shared {
    gpu.func @other() kernel { gpu.return }
  }
  func.func @main(%n: index) {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) module(@shared) function(@k1) {
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) module(@shared) function(@k2) {
      gpu.terminator
    }
    return
  }
}
