; A small device bitcode library linked with -l (only what the kernels call is imported).
define float @scale_by_two(float %x) {
  %r = fmul float %x, 2.0
  ret float %r
}
