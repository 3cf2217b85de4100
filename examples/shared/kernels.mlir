// Target-neutral kernels for the shared-library example, lowered for whichever GPU_TARGET the build uses.
module attributes {gpu.container_module} {
  gpu.module @blend {
    // out[i] = a[i] * w + b[i] * (1 - w)
    gpu.func @blend(%a: memref<?xf32>, %b: memref<?xf32>, %out: memref<?xf32>, %w: f32) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      %i = gpu.global_id x
      %n = memref.dim %a, %c0 : memref<?xf32>
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xf32>
        %y = memref.load %b[%i] : memref<?xf32>
        %rest = arith.subf %one, %w : f32
        %p = arith.mulf %x, %w : f32
        %q = arith.mulf %y, %rest : f32
        %r = arith.addf %p, %q : f32
        memref.store %r, %out[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
