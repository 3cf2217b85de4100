// Compare-and-swap, exchange and atomic loads/stores: mlir-translate 22 crashes verifying these in a gpu.module
// without an enclosing module, so the translation step retypes the module (mlirtools.translate_pieces).
module attributes {gpu.container_module} {
  gpu.module @atomics_cas_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_kernelcc @cas(%p: !llvm.ptr<1>, %expected: i32, %desired: i32, %out: !llvm.ptr<1>) attributes {gpu.kernel} {
      %pair = llvm.cmpxchg %p, %expected, %desired acq_rel monotonic : !llvm.ptr<1>, i32
      %old = llvm.extractvalue %pair[0] : !llvm.struct<(i32, i1)>
      %swapped = llvm.atomicrmw xchg %p, %old seq_cst : !llvm.ptr<1>, i32
      %now = llvm.load %p atomic acquire {alignment = 4 : i64} : !llvm.ptr<1> -> i32
      %sum = llvm.add %now, %swapped : i32
      llvm.store %sum, %out atomic release {alignment = 4 : i64} : i32, !llvm.ptr<1>
      llvm.return
    }
  }
}
