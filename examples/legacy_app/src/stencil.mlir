// A 3-point stencil in target-neutral gpu/memref/arith code: the build chooses the target (GPU_TARGET).
module attributes {gpu.container_module} {
  gpu.module @stencil {
    gpu.func @stencil3(%in: memref<?xf32>, %out: memref<?xf32>, %n: index) kernel {
      %c1 = arith.constant 1 : index
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %last = arith.subi %n, %c1 : index
      %inside = arith.cmpi ult, %i, %last : index
      %notfirst = arith.cmpi ugt, %i, %c1 : index
      %ok = arith.andi %inside, %notfirst : i1
      scf.if %ok {
        %im1 = arith.subi %i, %c1 : index
        %ip1 = arith.addi %i, %c1 : index
        %a = memref.load %in[%im1] : memref<?xf32>
        %b = memref.load %in[%i] : memref<?xf32>
        %c = memref.load %in[%ip1] : memref<?xf32>
        %ab = arith.addf %a, %b : f32
        %abc = arith.addf %ab, %c : f32
        %third = arith.constant 0.333333343 : f32
        %r = arith.mulf %abc, %third : f32
        memref.store %r, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
