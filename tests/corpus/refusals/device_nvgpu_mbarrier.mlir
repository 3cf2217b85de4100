// A kernel using NVIDIA's mbarrier ops (nvgpu, as TMA kernels do): lowerable for NVVM only.
!barrierType = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!tokenType = !nvgpu.mbarrier.token
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wait_on_barrier(%out: memref<4xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %barrier = nvgpu.mbarrier.create -> !barrierType
      nvgpu.mbarrier.init %barrier[%c0], %c1 : !barrierType
      %token = nvgpu.mbarrier.arrive %barrier[%c0] : !barrierType -> !tokenType
      %tid = gpu.thread_id x
      %v = arith.index_cast %tid : index to i32
      memref.store %v, %out[%tid] : memref<4xi32>
      gpu.return
    }
  }
}
