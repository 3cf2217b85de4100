module attributes {gpu.container_module} {
  func.func @host(%n: index) {
    return
  }
  module @inner attributes {gpu.container_module} {
    func.func @f(%n: index) {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
        gpu.terminator
      }
      return
    }
  }
}
