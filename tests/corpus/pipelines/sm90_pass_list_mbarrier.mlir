// RUN: mlir-opt %s -convert-nvgpu-to-nvvm -gpu-kernel-outlining -convert-vector-to-scf -convert-scf-to-cf \
// RUN:   -convert-nvvm-to-llvm -convert-vector-to-llvm -convert-index-to-llvm=index-bitwidth=32 \
// RUN:   -convert-arith-to-llvm -finalize-memref-to-llvm -convert-func-to-llvm -expand-strided-metadata \
// RUN:   -nvvm-attach-target="module=main_kernel features=+ptx80 chip=sm_90a O=3" -convert-gpu-to-nvvm \
// RUN:   -gpu-to-llvm -gpu-module-to-binary="format=isa" -canonicalize -cse -reconcile-unrealized-casts \
// RUN: | FileCheck %s
// The hand-written pass list of upstream's older sm_90 tests, as flags on one mlir-opt: nvgpu lowered before
// outlining, the target attached only to the module the regex names (`module=main_kernel`), PTX out.
// The kernel: an mbarrier in workgroup memory that every thread arrives on, then waits for its phase to flip.
// CHECK: mbarrier.init.shared.b64
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %out = memref.alloc() : memref<64xi32>
  %unranked = memref.cast %out : memref<64xi32> to memref<*xi32>
  gpu.host_register %unranked : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %barrier = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
    %leader = arith.cmpi eq, %tx, %c0 : index
    scf.if %leader {
      nvgpu.mbarrier.init %barrier[%c0], %sx : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %token = nvgpu.mbarrier.arrive %barrier[%c0]
        : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>> -> !nvgpu.mbarrier.token
    %done = nvgpu.mbarrier.test.wait %barrier[%c0], %token
        : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>, !nvgpu.mbarrier.token
    %flag = arith.extui %done : i1 to i32
    memref.store %flag, %out[%tx] : memref<64xi32>
    gpu.terminator
  }
  return
}
