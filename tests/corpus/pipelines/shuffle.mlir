// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --entry-point-result=void | FileCheck %s
// A shuffle across a warp, with arithmetic, written to host-registered memory.
func.func @main() {
  %data = memref.alloc() : memref<16xf32>
  %one = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %cast = memref.cast %data : memref<16xf32> to memref<*xf32>
  gpu.host_register %cast : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%grid_x = %one, %grid_y = %one, %grid_z = %one)
             threads(%tx, %ty, %tz) in (%block_x = %c16, %block_y = %one, %block_z = %one) {
    %t0 = arith.index_cast %tx : index to i32
    %val = arith.sitofp %t0 : i32 to f32
    %width = arith.index_cast %block_x : index to i32
    %offset = arith.constant 4 : i32
    %shfl, %valid = gpu.shuffle xor %val, %offset, %width : f32
    %e = arith.mulf %shfl, %val : f32
    %r = arith.addf %e, %val : f32
    memref.store %r, %data[%tx] : memref<16xf32>
    gpu.terminator
  }
  call @printMemrefF32(%cast) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
