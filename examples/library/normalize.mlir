// A second file of kernels using the same math library (GPU_LINKLIBS=mathlib).
module attributes {gpu.container_module} {
  gpu.module @normalize {
    func.func private @unit_range(f32, f32, f32) -> f32
    // x[i] = (x[i] - lo) / (hi - lo), clamped to [0, 1]
    gpu.func @to_unit(%x: memref<?xf32>, %lo: f32, %hi: f32) kernel {
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
        %r = func.call @unit_range(%v, %lo, %hi) : (f32, f32, f32) -> f32
        memref.store %r, %x[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
