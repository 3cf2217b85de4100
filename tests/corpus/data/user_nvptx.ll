; User bitcode library for NVVM link tests: overrides __nv_sinf and provides a helper that itself needs libdevice.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare float @__nv_expf(float)

define float @__nv_sinf(float %x) {
  %r = fmul float %x, 0x3FF0000000000000
  ret float %r
}

define float @user_scale(float %x) {
  %e = call float @__nv_expf(float %x)
  %r = fmul float %e, 2.500000e-01
  ret float %r
}

define float @user_unused(float %x) {
  ret float %x
}
