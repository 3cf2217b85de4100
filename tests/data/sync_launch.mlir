// Target-neutral host func.func with two gpu.launch regions (need gpu-kernel-outlining), affine.apply (lower-affine), math.exp softmax numerator.
#blk = affine_map<(b, t)[s] -> (b * s + t)>
module {
  func.func @launch_host_softmax_num(%x: memref<4096xf32>, %y: memref<4096xf32>, %mx: f32) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
    %dx = gpu.alloc () : memref<4096xf32>
    %dy = gpu.alloc () : memref<4096xf32>
    gpu.memcpy %dx, %x : memref<4096xf32>, memref<4096xf32>
    // y[i] = exp(x[i] - mx)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c16, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %i = affine.apply #blk(%bx, %tx)[%sx]
      %v = memref.load %dx[%i] : memref<4096xf32>
      %d = arith.subf %v, %mx : f32
      %e = math.exp %d : f32
      memref.store %e, %dy[%i] : memref<4096xf32>
      gpu.terminator
    }
    // x[i] = y[i] clamped to [0, 1] with a select chain.
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c16, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %i = affine.apply #blk(%bx, %tx)[%sx]
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %v = memref.load %dy[%i] : memref<4096xf32>
      %lo = arith.maximumf %v, %zero : f32
      %hi = arith.minimumf %lo, %one : f32
      memref.store %hi, %dx[%i] : memref<4096xf32>
      gpu.terminator
    }
    gpu.memcpy %y, %dx : memref<4096xf32>, memref<4096xf32>
    gpu.dealloc %dx : memref<4096xf32>
    gpu.dealloc %dy : memref<4096xf32>
    return
  }
}
