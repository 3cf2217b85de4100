// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Bitwise or of each row of a host-initialised matrix, one block per row of 7 threads (a partial warp).
func.func @main() {
  %data = memref.alloc() : memref<3x7xi32>
  %result = memref.alloc() : memref<3xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %seed = arith.constant 12 : i32
  scf.for %row = %c0 to %c3 step %c1 {
    scf.for %col = %c0 to %c7 step %c1 {
      %r = arith.index_cast %row : index to i32
      %c = arith.index_cast %col : index to i32
      %rc = arith.muli %r, %c : i32
      %v = arith.xori %rc, %seed : i32
      memref.store %v, %data[%row, %col] : memref<3x7xi32>
    }
  }
  %in = memref.cast %data : memref<3x7xi32> to memref<*xi32>
  %out = memref.cast %result : memref<3xi32> to memref<*xi32>
  gpu.host_register %in : memref<*xi32>
  gpu.host_register %out : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c7, %sy = %c1, %sz = %c1) {
    %v = memref.load %data[%bx, %tx] : memref<3x7xi32>
    %r = gpu.all_reduce or %v uniform {} : (i32) -> (i32)
    memref.store %r, %result[%bx] : memref<3xi32>
    gpu.terminator
  }
  // CHECK: [12, 15, 14]
  call @printMemrefI32(%out) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
