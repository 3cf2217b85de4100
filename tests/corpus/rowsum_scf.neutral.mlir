// Target-neutral: scf.for strided loop, workgroup memory attribution, gpu.barrier and gpu.shuffle xor tree; one 64-thread block per row.
// identity-targets: nvvm rocdl
module attributes {gpu.container_module} {
  gpu.module @rowsum_scf_neutral {
    // sums[row] = sum_j m[row, j]; launched with 64 threads per block, one block per row.
    gpu.func @row_sums(%m: memref<?x?xf32>, %sums: memref<?xf32>)
        workgroup(%partial: memref<64xf32, #gpu.address_space<workgroup>>)
        kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols = memref.dim %m, %c1 : memref<?x?xf32>
      %acc = scf.for %j = %tid to %cols step %c64 iter_args(%a = %zero) -> (f32) {
        %v = memref.load %m[%row, %j] : memref<?x?xf32>
        %a2 = arith.addf %a, %v : f32
        scf.yield %a2 : f32
      }
      // Reduce within each 32-lane group with shuffles (valid for warp32 and wave64).
      %w = arith.constant 32 : i32
      %s1 = arith.constant 1 : i32
      %s2 = arith.constant 2 : i32
      %s4 = arith.constant 4 : i32
      %s8 = arith.constant 8 : i32
      %s16 = arith.constant 16 : i32
      %r1, %ok1 = gpu.shuffle xor %acc, %s16, %w : f32
      %a1 = arith.addf %acc, %r1 : f32
      %r2, %ok2 = gpu.shuffle xor %a1, %s8, %w : f32
      %a2 = arith.addf %a1, %r2 : f32
      %r3, %ok3 = gpu.shuffle xor %a2, %s4, %w : f32
      %a3 = arith.addf %a2, %r3 : f32
      %r4, %ok4 = gpu.shuffle xor %a3, %s2, %w : f32
      %a4 = arith.addf %a3, %r4 : f32
      %r5, %ok5 = gpu.shuffle xor %a4, %s1, %w : f32
      %a5 = arith.addf %a4, %r5 : f32
      memref.store %a5, %partial[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %is0 = arith.cmpi eq, %tid, %c0 : index
      scf.if %is0 {
        %p0 = memref.load %partial[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
        %p1 = memref.load %partial[%c32] : memref<64xf32, #gpu.address_space<workgroup>>
        %t = arith.addf %p0, %p1 : f32
        memref.store %t, %sums[%row] : memref<?xf32>
      }
      gpu.return
    }

    // Row-wise scale by a 2-D nested scf.for (no ids in the inner loop bounds).
    gpu.func @scale_rows(%m: memref<16x128xf32>, %s: memref<16xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %c128 = arith.constant 128 : index
      %tid = gpu.thread_id x
      %bdim = gpu.block_dim x
      scf.for %r = %c0 to %c16 step %c1 {
        %f = memref.load %s[%r] : memref<16xf32>
        scf.for %j = %tid to %c128 step %bdim {
          %v = memref.load %m[%r, %j] : memref<16x128xf32>
          %p = arith.mulf %v, %f : f32
          memref.store %p, %m[%r, %j] : memref<16x128xf32>
        }
      }
      gpu.return
    }
  }
}
