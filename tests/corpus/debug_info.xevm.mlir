// Debug info: #llvm.di_* attributes + locations fused with #llvm.di_subprogram -> LLVM IR !dbg on a kernel that also gets
// !intel_reqd_sub_group_size (no SPIR-V debug instructions: SPV_KHR_non_semantic_info is not enabled upstream).
#file = #llvm.di_file<"debug_info_kernels.cu" in "/src/corpus">
#cu = #llvm.di_compile_unit<id = distinct[0]<>, sourceLanguage = DW_LANG_C_plus_plus, file = #file, producer = "scons-mlir-gpu corpus", isOptimized = false, emissionKind = Full>
#f32 = #llvm.di_basic_type<tag = DW_TAG_base_type, name = "float", sizeInBits = 32, encoding = DW_ATE_float>
#sp_ty = #llvm.di_subroutine_type<types = #llvm.di_null_type, #f32>
#sp_axpb = #llvm.di_subprogram<id = distinct[1]<>, compileUnit = #cu, scope = #file, name = "axpb", linkageName = "axpb_dbg", file = #file, line = 10, scopeLine = 10, subprogramFlags = Definition, type = #sp_ty>
#sp_sq = #llvm.di_subprogram<id = distinct[2]<>, compileUnit = #cu, scope = #file, name = "square", file = #file, line = 3, scopeLine = 3, subprogramFlags = Definition, type = #sp_ty>
module attributes {gpu.container_module} {
  gpu.module @debug_info_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i32 attributes {no_unwind, will_return}
    llvm.func spir_funccc @square(%x: f32) -> f32 {
      %r = llvm.fmul %x, %x : f32 loc(#loc_sq4)
      llvm.return %r : f32 loc(#loc_sq5)
    } loc(#loc_sq)

    // y[i] = a * square(x[i]) + b
    llvm.func spir_kernelcc @axpb_dbg(%a: f32, %b: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32 loc(#loc11)
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i32 loc(#loc11)
      %idx = llvm.sext %i : i32 to i64 loc(#loc12)
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32 loc(#loc12)
      %v = llvm.load %px : !llvm.ptr<1> -> f32 loc(#loc12)
      %s = llvm.call spir_funccc @square(%v) : (f32) -> f32 loc(#loc13)
      %m = llvm.fmul %a, %s : f32 loc(#loc13)
      %r = llvm.fadd %m, %b : f32 loc(#loc13)
      %py = llvm.getelementptr %y[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32 loc(#loc14)
      llvm.store %r, %py : f32, !llvm.ptr<1> loc(#loc14)
      llvm.return loc(#loc15)
    } loc(#loc_axpb)
  }
}
#loc_sq = loc(fused<#sp_sq>["debug_info_kernels.cu":3:1])
#loc_sq4 = loc(fused<#sp_sq>["debug_info_kernels.cu":4:12])
#loc_sq5 = loc(fused<#sp_sq>["debug_info_kernels.cu":4:3])
#loc_axpb = loc(fused<#sp_axpb>["debug_info_kernels.cu":10:1])
#loc11 = loc(fused<#sp_axpb>["debug_info_kernels.cu":11:11])
#loc12 = loc(fused<#sp_axpb>["debug_info_kernels.cu":12:13])
#loc13 = loc(fused<#sp_axpb>["debug_info_kernels.cu":13:18])
#loc14 = loc(fused<#sp_axpb>["debug_info_kernels.cu":13:3])
#loc15 = loc(fused<#sp_axpb>["debug_info_kernels.cu":14:1])
