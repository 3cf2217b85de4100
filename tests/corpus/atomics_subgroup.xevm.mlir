// Atomics (atomicrmw add/max/umin, a work-group fence) and sub-group builtins (sub_group_shuffle_xor,
// get_sub_group_local_id, sub_group_reduce_add), as convert-gpu-to-llvm-spv emits them.
module attributes {gpu.container_module} {
  gpu.module @atomics_subgroup_xevm [#xevm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func spir_funccc @_Z13get_global_idj(i32) -> i64 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z22get_sub_group_local_idv() -> i32 attributes {no_unwind, will_return}
    llvm.func spir_funccc @_Z21sub_group_shuffle_xorfj(f32, i32) -> f32 attributes {convergent, no_unwind, will_return}
    llvm.func spir_funccc @_Z20sub_group_reduce_addi(i32) -> i32 attributes {convergent, no_unwind, will_return}
    llvm.func spir_kernelcc @histogram(%bins: !llvm.ptr<1>, %keys: !llvm.ptr<1>, %hi: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %pk = llvm.getelementptr %keys[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
      %k = llvm.load %pk : !llvm.ptr<1> -> i32
      %pb = llvm.getelementptr %bins[%k] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
      %old = llvm.atomicrmw add %pb, %one monotonic : !llvm.ptr<1>, i32
      %m = llvm.atomicrmw max %hi, %k syncscope("workgroup") acq_rel : !llvm.ptr<1>, i32
      %prev = llvm.atomicrmw umin %pb, %m acq_rel : !llvm.ptr<1>, i32
      llvm.fence syncscope("workgroup") release
      %sum = llvm.call spir_funccc @_Z20sub_group_reduce_addi(%k) {convergent} : (i32) -> i32
      llvm.store %sum, %pk : i32, !llvm.ptr<1>
      llvm.return
    }
    llvm.func spir_kernelcc @butterfly(%x: !llvm.ptr<1>) attributes {gpu.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %i = llvm.call spir_funccc @_Z13get_global_idj(%c0) : (i32) -> i64
      %lane = llvm.call spir_funccc @_Z22get_sub_group_local_idv() : () -> i32
      %p = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %o = llvm.call spir_funccc @_Z21sub_group_shuffle_xorfj(%v, %c1) {convergent} : (f32, i32) -> f32
      %l = llvm.uitofp %lane : i32 to f32
      %s = llvm.fadd %o, %l : f32
      llvm.store %s, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
