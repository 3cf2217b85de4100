// RUN: mlir-opt %s -convert-scf-to-cf -gpu-kernel-outlining -convert-gpu-to-rocdl="chipset=gfx908" \
// RUN:   -rocdl-attach-target="chip=gfx908" -gpu-to-llvm -reconcile-unrealized-casts \
// RUN:   -gpu-module-to-binary="format=isa" \
// RUN: | FileCheck %s
// ROCDL on CDNA (gfx908, 64-lane waves): xor and idx shuffles (ds_bpermute) and a wave-wide butterfly sum
// written as a loop of xor shuffles, in a pre-outlined kernel, serialized as AMDGPU assembly (format=isa).
// gpu.all_reduce is left out: it reads the block size through ockl, which needs ROCm's device libraries.
module attributes {gpu.container_module} {
  gpu.module @wave {
    gpu.func @sums(%data: memref<64xf32>, %pairs: memref<64xf32>, %total: memref<1xf32>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %v = memref.load %data[%tid] : memref<64xf32>
      %width = arith.constant 64 : i32
      %one = arith.constant 1 : i32
      %zero = arith.constant 0 : i32
      %partner, %valid = gpu.shuffle xor %v, %one, %width : f32
      %first_lane, %ok = gpu.shuffle idx %v, %zero, %width : f32
      %pair = arith.addf %v, %partner : f32
      %shifted = arith.subf %pair, %first_lane : f32
      memref.store %shifted, %pairs[%tid] : memref<64xf32>
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %sum, %stride = scf.for %step = %c0 to %c6 step %c1 iter_args(%acc = %v, %offset = %one) -> (f32, i32) {
        %other, %in = gpu.shuffle xor %acc, %offset, %width : f32
        %next = arith.addf %acc, %other : f32
        %twice = arith.shli %offset, %one : i32
        scf.yield %next, %twice : f32, i32
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        memref.store %sum, %total[%c0] : memref<1xf32>
      }
      gpu.return
    }
  }
  // CHECK: ds_bpermute
  func.func @launch(%data: memref<64xf32>, %pairs: memref<64xf32>, %total: memref<1xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @wave::@sums blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        args(%data : memref<64xf32>, %pairs : memref<64xf32>, %total : memref<1xf32>)
    return
  }
}
