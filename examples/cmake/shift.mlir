// Target-neutral: y[i] = x[i] + b, in a second source (a second host object and header).
module attributes {gpu.container_module} {
  gpu.module @shift_module {
    gpu.func @shift(%x: memref<16xf32>, %y: memref<16xf32>, %b: f32) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<16xf32>
      %r = arith.addf %v, %b : f32
      memref.store %r, %y[%i] : memref<16xf32>
      gpu.return
    }
  }
}
