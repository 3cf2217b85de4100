; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"

%0 = type {}
%1 = type {}
%2 = type {}

@k_binary = internal constant [43 x i8] c"mlirgpu.placeholder.0123456789abcdef.000000", align 8
@k_module = internal global ptr null
@j_binary = internal constant [44 x i8] c"mlirgpu.placeholder.0123456789abcdef.000001\00", align 8
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
  %0 = call ptr @mgpuModuleLoad(ptr @k_binary, i64 43)
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

; uselistorder directives
uselistorder ptr @k_module, { 2, 3, 0, 1 }
uselistorder ptr @j_module, { 1, 2, 0 }
uselistorder ptr @mgpuModuleGetFunction, { 2, 1, 0 }
uselistorder ptr @mgpuStreamCreate, { 2, 1, 0 }
uselistorder ptr @mgpuLaunchKernel, { 2, 1, 0 }
uselistorder ptr @mgpuStreamSynchronize, { 2, 1, 0 }
uselistorder ptr @mgpuStreamDestroy, { 2, 1, 0 }

!llvm.module.flags = !{!0}

!0 = !{i32 2, !"Debug Info Version", i32 3}
