// A kernel launched inside async.execute, awaited by the host: the host lowering must handle async.
func.func @main() {
  %data = memref.alloc() : memref<4xf32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %token = async.execute {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%x = %c4, %y = %c1, %z = %c1) {
      %f = arith.constant 1.0 : f32
      memref.store %f, %data[%tx] : memref<4xf32>
      gpu.terminator
    }
    async.yield
  }
  async.await %token : !async.token
  return
}
