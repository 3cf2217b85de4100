// identity-chips: gfx942
// Debug info with two DICompileUnits (two source files, Full + LineTablesOnly): llvm.dbg.cu holds both; a helper from one CU is called from a kernel of the other (ROCDL).
#file_a = #llvm.di_file<"kernel_a.cu" in "/src/a">
#file_b = #llvm.di_file<"helpers_b.cu" in "/src/b">
#cu_a = #llvm.di_compile_unit<id = distinct[0]<>, sourceLanguage = DW_LANG_C_plus_plus, file = #file_a, producer = "corpus A", isOptimized = false, emissionKind = Full>
#cu_b = #llvm.di_compile_unit<id = distinct[1]<>, sourceLanguage = DW_LANG_C_plus_plus_14, file = #file_b, producer = "corpus B", isOptimized = true, emissionKind = LineTablesOnly>
#f32 = #llvm.di_basic_type<tag = DW_TAG_base_type, name = "float", sizeInBits = 32, encoding = DW_ATE_float>
#sp_ty = #llvm.di_subroutine_type<types = #llvm.di_null_type, #f32>
#sp_cube = #llvm.di_subprogram<id = distinct[2]<>, compileUnit = #cu_b, scope = #file_b, name = "cube", file = #file_b, line = 5, scopeLine = 5, subprogramFlags = "Definition|Optimized", type = #sp_ty>
#sp_kern = #llvm.di_subprogram<id = distinct[3]<>, compileUnit = #cu_a, scope = #file_a, name = "two_cu", file = #file_a, line = 20, scopeLine = 20, subprogramFlags = Definition, type = #sp_ty>
module attributes {gpu.container_module} {
  gpu.module @debug_multi_cu_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @cube(%x: f32) -> f32 {
      %s = llvm.fmul %x, %x : f32 loc(#lb6)
      %c = llvm.fmul %s, %x : f32 loc(#lb6)
      llvm.return %c : f32 loc(#lb7)
    } loc(#lb5)

    llvm.func @two_cu(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %tid = rocdl.workitem.id.x : i32 loc(#la21)
      %idx = llvm.zext %tid : i32 to i64 loc(#la21)
      %px = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32 loc(#la22)
      %v = llvm.load %px : !llvm.ptr<1> -> f32 loc(#la22)
      %r = llvm.call @cube(%v) : (f32) -> f32 loc(#la23)
      llvm.store %r, %px : f32, !llvm.ptr<1> loc(#la24)
      llvm.return loc(#la25)
    } loc(#la20)
  }
}
#lb5 = loc(fused<#sp_cube>["helpers_b.cu":5:1])
#lb6 = loc(fused<#sp_cube>["helpers_b.cu":6:14])
#lb7 = loc(fused<#sp_cube>["helpers_b.cu":7:3])
#la20 = loc(fused<#sp_kern>["kernel_a.cu":20:1])
#la21 = loc(fused<#sp_kern>["kernel_a.cu":21:17])
#la22 = loc(fused<#sp_kern>["kernel_a.cu":22:13])
#la23 = loc(fused<#sp_kern>["kernel_a.cu":23:9])
#la24 = loc(fused<#sp_kern>["kernel_a.cu":24:3])
#la25 = loc(fused<#sp_kern>["kernel_a.cu":25:1])
