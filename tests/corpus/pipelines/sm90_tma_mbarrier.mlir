// RUN: mlir-opt %s \
// RUN:   -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Hopper's tensor memory accelerator: the host builds a TMA descriptor for a 32x16 f16 tile of a device buffer
// (nvgpu.tma.create.descriptor), the kernel's first thread arms an mbarrier with the expected byte count and
// issues the bulk tensor copy into workgroup memory, every thread waits on the barrier's phase, then reads.
memref.global "private" @tile : memref<32x16xf16, 3>
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %host = memref.alloc() : memref<64x16xf16>
  scf.for %i = %c0 to %c64 step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %ij = arith.addi %i, %j : index
      %n = arith.index_cast %ij : index to i32
      %f = arith.sitofp %n : i32 to f16
      memref.store %f, %host[%i, %j] : memref<64x16xf16>
    }
  }
  %stream = gpu.wait async
  %dev, %t0 = gpu.alloc async [%stream] () : memref<64x16xf16>
  %t1 = gpu.memcpy async [%t0] %dev, %host : memref<64x16xf16>, memref<64x16xf16>
  gpu.wait [%t1]
  %unranked = memref.cast %dev : memref<64x16xf16> to memref<*xf16>
  %desc = nvgpu.tma.create.descriptor %unranked box[%c32, %c16] : memref<*xf16>
      -> !nvgpu.tensormap.descriptor<tensor = memref<32x16xf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %bytes = arith.constant 1024 : index
    %spin = arith.constant 1000000 : index
    %buffer = memref.get_global @tile : memref<32x16xf16, 3>
    %barrier = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
    %leader = arith.cmpi eq, %tx, %c0 : index
    scf.if %leader {
      nvgpu.mbarrier.init %barrier[%c0], %c1 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      nvgpu.tma.prefetch.descriptor %desc
          : !nvgpu.tensormap.descriptor<tensor = memref<32x16xf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
    }
    gpu.barrier
    scf.if %leader {
      nvgpu.mbarrier.arrive.expect_tx %barrier[%c0], %bytes
          : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      nvgpu.tma.async.load %desc[%c0, %c0], %barrier[%c0] to %buffer
          : !nvgpu.tensormap.descriptor<tensor = memref<32x16xf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>,
            !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>> -> memref<32x16xf16, 3>
    }
    %phase = arith.constant false
    nvgpu.mbarrier.try_wait.parity %barrier[%c0], %phase, %spin
        : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
    %v = memref.load %buffer[%tx, %c1] : memref<32x16xf16, 3>
    %w = arith.extf %v : f16 to f32
    %last = arith.cmpi eq, %tx, %c16 : index
    scf.if %last {
      gpu.printf "row 16 of the tile, column 1: %f\n", %w : f32
    }
    gpu.terminator
  }
  // CHECK: row 16 of the tile, column 1: 17.000000
  return
}
