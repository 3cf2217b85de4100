// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Device memory three ways: host-shared (managed) memory from a synchronous gpu.alloc host_shared that host and
// kernel both touch, a device buffer filled by gpu.memset and gpu.memcpy (with their tokens), and a
// host-registered buffer the kernel writes directly.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %shared = gpu.alloc host_shared (%c6) : memref<?xf32>
  %flags = memref.alloc() : memref<6xi32>
  %flags_unranked = memref.cast %flags : memref<6xi32> to memref<*xi32>
  gpu.host_register %flags_unranked : memref<*xi32>
  scf.for %i = %c0 to %c6 step %c1 {
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    memref.store %f, %shared[%i] : memref<?xf32>
  }
  %stream = gpu.wait async
  %dev, %t0 = gpu.alloc async [%stream] (%c6) : memref<?xf32>
  %t1 = gpu.memset async [%t0] %dev, %zero : memref<?xf32>, f32
  %t2 = gpu.memcpy async [%t1] %dev, %shared : memref<?xf32>, memref<?xf32>
  gpu.wait [%t2]
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c1, %sz = %c1) {
    %v = memref.load %dev[%tx] : memref<?xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %shared[%tx] : memref<?xf32>
    %seen = arith.constant 1 : i32
    memref.store %seen, %flags[%tx] : memref<6xi32>
    gpu.terminator
  }
  %done = gpu.wait async
  %t3 = gpu.dealloc async [%done] %dev : memref<?xf32>
  gpu.wait [%t3]
  %out = memref.cast %shared : memref<?xf32> to memref<*xf32>
  // CHECK: [0, 2, 4, 6, 8, 10]
  call @printMemrefF32(%out) : (memref<*xf32>) -> ()
  // CHECK: [1, 1, 1, 1, 1, 1]
  call @printMemrefI32(%flags_unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
func.func private @printMemrefI32(memref<*xi32>)
