// Target-neutral: y[i] = a * x[i], lowered for whichever GPU_TARGET the build names.
module attributes {gpu.container_module} {
  gpu.module @scale_module {
    gpu.func @scale(%x: memref<?xf32>, %y: memref<?xf32>, %a: f32) kernel {
      %c0 = arith.constant 0 : index
      %i = gpu.thread_id x
      %n = memref.dim %x, %c0 : memref<?xf32>
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %v = memref.load %x[%i] : memref<?xf32>
        %r = arith.mulf %v, %a : f32
        memref.store %r, %y[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
