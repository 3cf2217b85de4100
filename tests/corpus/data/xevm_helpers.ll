; Device helpers for link_files.xevm.mlir (SPIR-V triple): a used function, an unused one (not linked in:
; LinkOnlyNeeded) and a global table.
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1"
target triple = "spirv64-unknown-unknown"

@scale_table = addrspace(1) constant [4 x float] [float 1.0, float 0.5, float 0.25, float 0.125]

define spir_func float @helper_scale(float %v, i32 %k) {
  %p = getelementptr [4 x float], ptr addrspace(1) @scale_table, i64 0, i32 %k
  %s = load float, ptr addrspace(1) %p
  %r = fmul float %v, %s
  ret float %r
}

define spir_func float @helper_unused(float %v) {
  %r = fadd float %v, 1.0
  ret float %r
}
