// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin opt-level=3" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// A warp-level mma.sync (m16n8k16, f16 inputs, f32 accumulators) through nvgpu.mma.sync, with each lane's
// fragments loaded by ldmatrix (nvgpu.ldmatrix) from workgroup memory: the sm_80 tensor-core path that
// convert-nvgpu-to-nvvm in the pipeline lowers.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %out = memref.alloc() : memref<32x4xf32>
  %unranked = memref.cast %out : memref<32x4xf32> to memref<*xf32>
  gpu.host_register %unranked : memref<*xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1)
             workgroup(%tile : memref<16x16xf16, #gpu.address_space<workgroup>>) {
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %one = arith.constant 1.0 : f16
    scf.for %j = %c0 to %c16 step %c2 {
      %col = arith.addi %j, %c0 : index
      %row = arith.remui %tx, %c16 : index
      memref.store %one, %tile[%row, %col] : memref<16x16xf16, #gpu.address_space<workgroup>>
      %next = arith.addi %col, %c1 : index
      memref.store %one, %tile[%row, %next] : memref<16x16xf16, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %lane_row = arith.remui %tx, %c16 : index
    %half = arith.divui %tx, %c16 : index
    %lane_col = arith.muli %half, %c8 : index
    %a = nvgpu.ldmatrix %tile[%lane_row, %lane_col] {numTiles = 4 : i32, transpose = false}
        : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
    %b = nvgpu.ldmatrix %tile[%lane_row, %c0] {numTiles = 2 : i32, transpose = true}
        : memref<16x16xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
    %zero = arith.constant dense<0.0> : vector<2x2xf32>
    %d = nvgpu.mma.sync (%a, %b, %zero) {mmaShape = [16, 8, 16]}
        : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %d00 = vector.extract %d[0, 0] : f32 from vector<2x2xf32>
    %d01 = vector.extract %d[0, 1] : f32 from vector<2x2xf32>
    %d10 = vector.extract %d[1, 0] : f32 from vector<2x2xf32>
    %d11 = vector.extract %d[1, 1] : f32 from vector<2x2xf32>
    memref.store %d00, %out[%tx, %c0] : memref<32x4xf32>
    memref.store %d01, %out[%tx, %c1] : memref<32x4xf32>
    memref.store %d10, %out[%tx, %c2] : memref<32x4xf32>
    memref.store %d11, %out[%tx, %c3] : memref<32x4xf32>
    gpu.terminator
  }
  // CHECK: 16
  call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(memref<*xf32>)
