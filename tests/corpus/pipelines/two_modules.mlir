// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Two gpu.modules written by hand, each with its own kernel, launched one after the other on the same buffer:
// the second scales what the first wrote. Each module becomes its own gpu.binary.
module attributes {gpu.container_module} {
  gpu.module @fill {
    gpu.func @iota(%buf: memref<?xf32>) kernel {
      %tid = gpu.thread_id x
      %i = arith.index_cast %tid : index to i32
      %f = arith.sitofp %i : i32 to f32
      memref.store %f, %buf[%tid] : memref<?xf32>
      gpu.return
    }
  }
  gpu.module @scale {
    gpu.func @times(%buf: memref<?xf32>, %factor: f32) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %buf[%tid] : memref<?xf32>
      %w = arith.mulf %v, %factor : f32
      memref.store %w, %buf[%tid] : memref<?xf32>
      gpu.return
    }
  }
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %factor = arith.constant 1.5 : f32
    %buf = memref.alloc(%c8) : memref<?xf32>
    %unranked = memref.cast %buf : memref<?xf32> to memref<*xf32>
    gpu.host_register %unranked : memref<*xf32>
    %n = memref.dim %buf, %c0 : memref<?xf32>
    gpu.launch_func @fill::@iota blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%buf : memref<?xf32>)
    gpu.launch_func @scale::@times blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1)
        args(%buf : memref<?xf32>, %factor : f32)
    // CHECK: [0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5]
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
