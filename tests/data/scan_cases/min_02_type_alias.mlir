!t = f32
module {
  gpu.module @k [#nvvm.target] {
  }
}
