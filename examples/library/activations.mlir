// Kernels that call the math library: its functions are declared here (`func.func private` without a body)
// and defined in mathlib.mlir, whose bitcode the build links (GPU_LINKLIBS=mathlib).
module attributes {gpu.container_module} {
  gpu.module @activations {
    func.func private @softplus(f32) -> f32
    func.func private @axpy(f32, f32, f32) -> f32
    // y[i] = a * softplus(x[i]) + y[i]
    gpu.func @softplus_axpy(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) kernel {
      %c0 = arith.constant 0 : index
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %0 = arith.muli %bid, %bdim : index
      %i = arith.addi %0, %tid : index
      %n = memref.dim %x, %c0 : memref<?xf32>
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %v = memref.load %x[%i] : memref<?xf32>
        %s = func.call @softplus(%v) : (f32) -> f32
        %w = memref.load %y[%i] : memref<?xf32>
        %r = func.call @axpy(%a, %s, %w) : (f32, f32, f32) -> f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
