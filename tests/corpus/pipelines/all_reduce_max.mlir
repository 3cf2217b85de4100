// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=isa" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Float maximum (maximumf: maxnumf would call libdevice's __nv_fmaxf) over a 2-D block, embedded as PTX
// (cubin-format=isa: the driver JITs it at load).
func.func @main() {
  %data = memref.alloc() : memref<4x6xf32>
  %result = memref.alloc() : memref<1xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %half = arith.constant 0.5 : f32
  scf.for %y = %c0 to %c4 step %c1 {
    scf.for %x = %c0 to %c6 step %c1 {
      %yx = arith.muli %y, %x : index
      %i = arith.index_cast %yx : index to i32
      %f = arith.sitofp %i : i32 to f32
      %v = arith.mulf %f, %half : f32
      memref.store %v, %data[%y, %x] : memref<4x6xf32>
    }
  }
  %in = memref.cast %data : memref<4x6xf32> to memref<*xf32>
  %out = memref.cast %result : memref<1xf32> to memref<*xf32>
  gpu.host_register %in : memref<*xf32>
  gpu.host_register %out : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c6, %sy = %c4, %sz = %c1) {
    %v = memref.load %data[%ty, %tx] : memref<4x6xf32>
    %m = gpu.all_reduce maximumf %v uniform {} : (f32) -> (f32)
    memref.store %m, %result[%c0] : memref<1xf32>
    gpu.terminator
  }
  // CHECK: [7.5]
  call @printMemrefF32(%out) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
