// Target-neutral math dialect ops (math.exp/log1p/tanh/sqrt/powf/sin, f32 + f64) that lower to __nv_* (libdevice) or __ocml_* (ocml) calls.
module attributes {gpu.container_module} {
  gpu.module @softplus {
    // y[i] = log1p(exp(x[i])) * tanh(x[i])   (mish-like activation)
    gpu.func @mish(%x: memref<?xf32>, %y: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %0 = arith.muli %bid, %bdim : index
      %i = arith.addi %0, %tid : index
      %n = memref.dim %x, %c0 : memref<?xf32>
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = memref.load %x[%i] : memref<?xf32>
        %e = math.exp %v : f32
        %sp = math.log1p %e : f32
        %t = math.tanh %v : f32
        %r = arith.mulf %sp, %t : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }

    // out[i] = sqrt(pow(|a[i]|, p)) + sin(a[i]) in double precision.
    gpu.func @pow_sin_f64(%a: memref<512xf64>, %out: memref<512xf64>, %p: f64) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %0 = arith.muli %bid, %bdim : index
      %i = arith.addi %0, %tid : index
      %v = memref.load %a[%i] : memref<512xf64>
      %av = math.absf %v : f64
      %pw = math.powf %av, %p : f64
      %sq = math.sqrt %pw : f64
      %s = math.sin %v : f64
      %r = arith.addf %sq, %s : f64
      memref.store %r, %out[%i] : memref<512xf64>
      gpu.return
    }
  }
}
