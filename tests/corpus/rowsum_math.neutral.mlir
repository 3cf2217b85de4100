// Target-neutral: scf.for strided row loop, math ops (exp, log1p, tanh, sqrt), gpu.barrier, gpu.shuffle xor
// with width 16 (convert-gpu-to-llvm-spv requires the kernel's intel_reqd_sub_group_size to equal the width).
// identity-targets: xevm
module attributes {gpu.container_module} {
  gpu.module @rowsum_math_neutral {
    gpu.func @row_softplus_sums(%m: memref<?x?xf32>, %sums: memref<?xf32>) kernel attributes {intel_reqd_sub_group_size = 16 : i32} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %nt = gpu.block_dim x
      %cols = memref.dim %m, %c1 : memref<?x?xf32>
      %zero = arith.constant 0.0 : f32
      %acc = scf.for %j = %tid to %cols step %nt iter_args(%a = %zero) -> (f32) {
        %v = memref.load %m[%row, %j] : memref<?x?xf32>
        %e = math.exp %v : f32
        %l = math.log1p %e : f32
        %t = math.tanh %v : f32
        %p = arith.mulf %l, %t : f32
        %s = arith.addf %a, %p : f32
        scf.yield %s : f32
      }
      gpu.barrier
      %w = arith.constant 16 : i32
      %s1 = arith.constant 1 : i32
      %s2 = arith.constant 2 : i32
      %r1, %ok1 = gpu.shuffle xor %acc, %s1, %w : f32
      %a1 = arith.addf %acc, %r1 : f32
      %r2, %ok2 = gpu.shuffle xor %a1, %s2, %w : f32
      %a2 = arith.addf %a1, %r2 : f32
      %q = math.sqrt %a2 : f32
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        memref.store %q, %sums[%row] : memref<?xf32>
      }
      gpu.return
    }
  }
}
