// RUN: mlir-opt %s -convert-scf-to-cf -gpu-kernel-outlining -convert-gpu-to-rocdl="chipset=gfx90a" \
// RUN:   -rocdl-attach-target="chip=gfx90a features=+xnack O=3" -gpu-to-llvm -reconcile-unrealized-casts \
// RUN:   -gpu-module-to-binary="format=isa" \
// RUN: | mlir-runner --shared-libs=%mlir_rocm_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// ROCDL as a list of flags (-convert-gpu-to-rocdl runs on each gpu.module, as mlir-opt nests it): two launches
// outline into two modules for gfx90a with XNACK on (features=+xnack) at O3; the second reads what the first
// wrote.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %buf = memref.alloc(%c10) : memref<?xi32>
  %unranked = memref.cast %buf : memref<?xi32> to memref<*xi32>
  gpu.host_register %unranked : memref<*xi32>
  %dev = call @mgpuMemGetDeviceMemRef1dInt32(%buf) : (memref<?xi32>) -> memref<?xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c10, %sy = %c1, %sz = %c1) {
    %t = arith.index_cast %tx : index to i32
    memref.store %t, %dev[%tx] : memref<?xi32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c10, %sy = %c1, %sz = %c1) {
    %v = memref.load %dev[%tx] : memref<?xi32>
    %three = arith.constant 3 : i32
    %w = arith.muli %v, %three : i32
    memref.store %w, %dev[%tx] : memref<?xi32>
    gpu.terminator
  }
  // CHECK: [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]
  call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @mgpuMemGetDeviceMemRef1dInt32(memref<?xi32>) -> memref<?xi32>
func.func private @printMemrefI32(memref<*xi32>)
