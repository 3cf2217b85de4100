module attributes {gpu.container_module} {
  gpu.module @main_kernel {
    gpu.func @g() kernel { gpu.return }
  }
  func.func @main(%n: index) {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
               threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
      gpu.terminator
    }
    return
  }
}
