; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"

%0 = type {}
%1 = type {}
%2 = type {}

@k_binary = internal constant [268 x i8] c"\00\01\02\03\04\05\06\07\08\09\0A\0B\0C\0D\0E\0F\10\11\12\13\14\15\16\17\18\19\1A\1B\1C\1D\1E\1F !\22#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\7F\80\81\82\83\84\85\86\87\88\89\8A\8B\8C\8D\8E\8F\90\91\92\93\94\95\96\97\98\99\9A\9B\9C\9D\9E\9F\A0\A1\A2\A3\A4\A5\A6\A7\A8\A9\AA\AB\AC\AD\AE\AF\B0\B1\B2\B3\B4\B5\B6\B7\B8\B9\BA\BB\BC\BD\BE\BF\C0\C1\C2\C3\C4\C5\C6\C7\C8\C9\CA\CB\CC\CD\CE\CF\D0\D1\D2\D3\D4\D5\D6\D7\D8\D9\DA\DB\DC\DD\DE\DF\E0\E1\E2\E3\E4\E5\E6\E7\E8\E9\EA\EB\EC\ED\EE\EF\F0\F1\F2\F3\F4\F5\F6\F7\F8\F9\FA\FB\FC\FD\FE\FF\22\\\22\\\\ text \00", align 8
@k_module = internal global ptr null
@j_binary = internal constant [37 x i8] c"// ptx \22quoted\22 \\ back\0A.version 8.0\0A\00", align 8
@j_module = internal global ptr null
@llvm.global_ctors = appending global [2 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 123, ptr @k_load, ptr null }, { i32, ptr, ptr } { i32 123, ptr @j_load, ptr null }]
@llvm.global_dtors = appending global [2 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 123, ptr @k_unload, ptr null }, { i32, ptr, ptr } { i32 123, ptr @j_unload, ptr null }]
@k_kernel_name = private unnamed_addr constant [7 x i8] c"kernel\00", align 1
@j_kernel_name = private unnamed_addr constant [7 x i8] c"kernel\00", align 1

define void @main() {
  %1 = alloca %0, align 8
  %2 = alloca ptr, i64 0, align 8
  %3 = load ptr, ptr @k_module, align 8
  %4 = call ptr @mgpuModuleGetFunction(ptr %3, ptr @k_kernel_name)
  %5 = call ptr @mgpuStreamCreate()
  call void @mgpuLaunchKernel(ptr %4, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1, i32 0, ptr %5, ptr %2, ptr null, i64 0)
  call void @mgpuStreamSynchronize(ptr %5)
  call void @mgpuStreamDestroy(ptr %5)
  %6 = alloca %1, align 8
  %7 = alloca ptr, i64 0, align 8
  %8 = load ptr, ptr @j_module, align 8
  %9 = call ptr @mgpuModuleGetFunction(ptr %8, ptr @j_kernel_name)
  %10 = call ptr @mgpuStreamCreate()
  call void @mgpuLaunchKernel(ptr %9, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1, i32 0, ptr %10, ptr %7, ptr null, i64 0)
  call void @mgpuStreamSynchronize(ptr %10)
  call void @mgpuStreamDestroy(ptr %10)
  %11 = alloca %2, align 8
  %12 = alloca ptr, i64 0, align 8
  %13 = load ptr, ptr @k_module, align 8
  %14 = call ptr @mgpuModuleGetFunction(ptr %13, ptr @k_kernel_name)
  %15 = call ptr @mgpuStreamCreate()
  call void @mgpuLaunchKernel(ptr %14, i64 1, i64 1, i64 1, i64 1, i64 1, i64 1, i32 0, ptr %15, ptr %12, ptr null, i64 0)
  call void @mgpuStreamSynchronize(ptr %15)
  call void @mgpuStreamDestroy(ptr %15)
  ret void
}

define internal void @k_load() section ".text.startup" {
entry:
  %0 = call ptr @mgpuModuleLoad(ptr @k_binary, i64 268)
  store ptr %0, ptr @k_module, align 8
  ret void
}

declare ptr @mgpuModuleLoad(ptr, i64)

define internal void @k_unload() section ".text.startup" {
entry:
  %0 = load ptr, ptr @k_module, align 8
  call void @mgpuModuleUnload(ptr %0)
  ret void
}

declare void @mgpuModuleUnload(ptr)

define internal void @j_load() section ".text.startup" {
entry:
  %0 = call ptr @mgpuModuleLoadJIT(ptr @j_binary, i32 3)
  store ptr %0, ptr @j_module, align 8
  ret void
}

declare ptr @mgpuModuleLoadJIT(ptr, i32)

define internal void @j_unload() section ".text.startup" {
entry:
  %0 = load ptr, ptr @j_module, align 8
  call void @mgpuModuleUnload(ptr %0)
  ret void
}

declare ptr @mgpuModuleGetFunction(ptr, ptr)

declare ptr @mgpuStreamCreate()

declare void @mgpuLaunchKernel(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr, i64)

declare void @mgpuStreamSynchronize(ptr)

declare void @mgpuStreamDestroy(ptr)

!llvm.module.flags = !{!0}

!0 = !{i32 2, !"Debug Info Version", i32 3}
