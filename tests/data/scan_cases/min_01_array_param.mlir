gpu.module @k [#nvvm.target<link = []>] {
}
