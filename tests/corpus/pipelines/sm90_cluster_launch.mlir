// RUN: mlir-opt %s \
// RUN:   -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// A thread-block-cluster launch (sm_90): gpu.launch_func with `clusters in`, the kernel reading its cluster's id
// and size and its block's rank within the cluster, recorded per block in host-registered memory.
module attributes {gpu.container_module} {
  gpu.module @clusters {
    gpu.func @where(%out: memref<8x3xi32>) kernel {
      %bid = gpu.block_id x
      %cid = gpu.cluster_id x
      %cdim = gpu.cluster_dim x
      %rank = gpu.cluster_block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %first = arith.cmpi eq, %rank, %c0 : index
      %i = index.casts %cid : index to i32
      %d = index.casts %cdim : index to i32
      %r = index.casts %rank : index to i32
      memref.store %i, %out[%bid, %c0] : memref<8x3xi32>
      memref.store %d, %out[%bid, %c1] : memref<8x3xi32>
      memref.store %r, %out[%bid, %c2] : memref<8x3xi32>
      scf.if %first {
        gpu.printf "cluster %d of size %d starts at block %lld\n", %i, %d, %bid : i32, i32, index
      }
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %out = memref.alloc() : memref<8x3xi32>
    %unranked = memref.cast %out : memref<8x3xi32> to memref<*xi32>
    gpu.host_register %unranked : memref<*xi32>
    gpu.launch_func @clusters::@where clusters in (%c2, %c1, %c1) blocks in (%c8, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%out : memref<8x3xi32>)
    // CHECK: cluster {{[0-3]}} of size 2
    call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
