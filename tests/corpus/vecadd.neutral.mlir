// Target-neutral gpu.func kernel: gpu.block_id/block_dim/thread_id, arith, memref load/store, scf.if bounds check (lowered by convert-gpu-to-{nvvm,rocdl}).
module attributes {gpu.container_module} {
  gpu.module @vecadd_neutral {
    gpu.func @vecadd(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %0 = arith.muli %bid, %bdim : index
      %i = arith.addi %0, %tid : index
      %n = memref.dim %c, %c0 : memref<?xf32>
      %inb = arith.cmpi ult, %i, %n : index
      scf.if %inb {
        %x = memref.load %a[%i] : memref<?xf32>
        %y = memref.load %b[%i] : memref<?xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i] : memref<?xf32>
      }
      gpu.return
    }

    gpu.func @vecadd_i32(%a: memref<1024xi32>, %b: memref<1024xi32>, %c: memref<1024xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      %0 = arith.muli %bid, %bdim : index
      %i = arith.addi %0, %tid : index
      %x = memref.load %a[%i] : memref<1024xi32>
      %y = memref.load %b[%i] : memref<1024xi32>
      %s = arith.addi %x, %y : i32
      memref.store %s, %c[%i] : memref<1024xi32>
      gpu.return
    }
  }
}
