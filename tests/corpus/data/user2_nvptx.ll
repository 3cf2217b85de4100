; Second user library (passed with -l): defines user_scale too, so -l order vs link=[...] decides which wins.
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define float @user_scale(float %x) {
  %r = fadd float %x, 7.000000e+00
  ret float %r
}
