// Vector types: vector<4xf32> loads/stores, insert/extractelement, shufflevector, a vector fma intrinsic and an
// i32 vector compare/select.
module attributes {gpu.container_module} {
  gpu.module @vectors_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_kernelcc @vfma(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %s: f32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %pa = llvm.getelementptr %a[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<4xf32>
      %pb = llvm.getelementptr %b[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<4xf32>
      %pc = llvm.getelementptr %c[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<4xf32>
      %va = llvm.load %pa {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
      %vb = llvm.load %pb {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
      %u = llvm.mlir.undef : vector<4xf32>
      %ins = llvm.insertelement %s, %u[%c0 : i32] : vector<4xf32>
      %splat = llvm.shufflevector %ins, %u [0, 0, 0, 0] : vector<4xf32>
      %f = llvm.intr.fma(%va, %vb, %splat) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
      %rev = llvm.shufflevector %f, %f [3, 2, 1, 0] : vector<4xf32>
      %e = llvm.extractelement %rev[%c0 : i32] : vector<4xf32>
      %out = llvm.insertelement %e, %f[%c0 : i32] : vector<4xf32>
      llvm.store %out, %pc {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @vclamp(%a: !llvm.ptr<1>, %lo: i32, %hi: i32) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %pa = llvm.getelementptr %a[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, vector<8xi32>
      %v = llvm.load %pa : !llvm.ptr<1> -> vector<8xi32>
      %u = llvm.mlir.undef : vector<8xi32>
      %l1 = llvm.insertelement %lo, %u[%c0 : i32] : vector<8xi32>
      %vl = llvm.shufflevector %l1, %u [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xi32>
      %h1 = llvm.insertelement %hi, %u[%c0 : i32] : vector<8xi32>
      %vh = llvm.shufflevector %h1, %u [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xi32>
      %lt = llvm.icmp "slt" %v, %vl : vector<8xi32>
      %m1 = llvm.select %lt, %vl, %v : vector<8xi1>, vector<8xi32>
      %gt = llvm.icmp "sgt" %m1, %vh : vector<8xi32>
      %m2 = llvm.select %gt, %vh, %m1 : vector<8xi1>, vector<8xi32>
      llvm.store %m2, %pa : vector<8xi32>, !llvm.ptr<1>
      llvm.return
    }
  }
}
