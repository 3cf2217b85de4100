// A second kernel source for the Meson example (one more entry in meson.build's `kernels`).
module attributes {gpu.container_module} {
  gpu.module @blend_module {
    gpu.func @blend(%w: f32, %a: memref<?xf32>, %b: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %i = gpu.global_id x
      %n = memref.dim %a, %c0 : memref<?xf32>
      %inside = arith.cmpi ult, %i, %n : index
      scf.if %inside {
        %x = memref.load %a[%i] : memref<?xf32>
        %y = memref.load %b[%i] : memref<?xf32>
        %d = arith.subf %y, %x : f32
        %r = arith.mulf %w, %d : f32
        %s = arith.addf %x, %r : f32
        memref.store %s, %a[%i] : memref<?xf32>
      }
      gpu.return
    }
  }
}
