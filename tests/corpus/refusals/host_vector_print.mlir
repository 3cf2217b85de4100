// Host code that prints a vector read back from memory a kernel wrote: the host lowering must handle vector.
func.func @main() {
  %data = memref.alloc() : memref<4xf32>
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%x = %c4, %y = %c1, %z = %c1) {
    %f = arith.constant 1.0 : f32
    memref.store %f, %data[%tx] : memref<4xf32>
    gpu.terminator
  }
  %cst = arith.constant 0.0 : f32
  %v = vector.transfer_read %data[%c1], %cst {in_bounds=[true]} : memref<4xf32>, vector<2xf32>
  vector.print %v : vector<2xf32>
  return
}
