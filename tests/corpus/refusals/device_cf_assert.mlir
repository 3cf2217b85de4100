// A kernel with cf.assert: MLIR 22 lowers it for NVVM only (to __assertfail); ROCDL and XeVM fail upstream too.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @check(%out: memref<4xi32>) kernel {
      %tid = gpu.thread_id x
      %c2 = arith.constant 2 : index
      %ok = arith.cmpi ult, %tid, %c2 : index
      cf.assert %ok, "thread id too large"
      %v = arith.index_cast %tid : index to i32
      memref.store %v, %out[%tid] : memref<4xi32>
      gpu.return
    }
  }
}
