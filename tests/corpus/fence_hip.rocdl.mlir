// identity-chips: gfx942
// __atomic_work_item_fence pulls in hip.bc (and nothing else: no __oclc_* constants, only the code object version flag) (ROCDL).
module attributes {gpu.container_module} {
  gpu.module @fence_hip_rocdl [#rocdl.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @__atomic_work_item_fence(i32, i32, i32)
    llvm.func @fenced_store(%x: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      %c0 = llvm.mlir.constant(0 : i32) : i32
      %c5 = llvm.mlir.constant(5 : i32) : i32
      %c2 = llvm.mlir.constant(2 : i32) : i32
      %one = llvm.mlir.constant(1.0 : f32) : f32
      llvm.store %one, %x : f32, !llvm.ptr<1>
      llvm.call @__atomic_work_item_fence(%c0, %c5, %c2) : (i32, i32, i32) -> ()
      llvm.return
    }
  }
}
