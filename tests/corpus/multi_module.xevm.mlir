// Several gpu.modules in one file; the second one has two XeVM targets (chips differ only in name: 22.1.8
// gives the chip to no tool) and a kernel that already asks for sub-group size 32 (upstream overwrites it with
// 16); the third has the default #xevm.target (bmg, O2) and its first kernel is declared after a kernel-less
// function.
module attributes {gpu.container_module} {
  gpu.module @first_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_kernelcc @negate(%p: !llvm.ptr<1>) attributes {gpu.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %n = llvm.fneg %v : f32
      llvm.store %n, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @second_xevm [#xevm.target<chip = "@CHIP@", O = @O@>, #xevm.target<chip = "bmg", O = @O@>] {
    llvm.func spir_kernelcc @twice(%p: !llvm.ptr<1>) attributes {gpu.kernel, intel_reqd_sub_group_size = 32 : i32} {
      %v = llvm.load %p : !llvm.ptr<1> -> i32
      %n = llvm.add %v, %v : i32
      llvm.store %n, %p : i32, !llvm.ptr<1>
      llvm.return
    }
  }
  gpu.module @third_xevm [#xevm.target] {
    llvm.func spir_funccc @sq(%v: f32) -> f32 {
      %m = llvm.fmul %v, %v : f32
      llvm.return %m : f32
    }
    llvm.func spir_kernelcc @square(%p: !llvm.ptr<1>) attributes {gpu.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %n = llvm.call spir_funccc @sq(%v) : (f32) -> f32
      llvm.store %n, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
