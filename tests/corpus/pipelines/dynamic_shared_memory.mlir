// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Dynamic shared memory: the launch asks for its size (dynamic_shared_memory_size), the kernel views it through
// gpu.dynamic_shared_memory as a typed buffer, reverses a row through it, and a static workgroup attribution
// holds a per-block counter next to it.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %bytes = arith.constant 64 : i32
  %data = memref.alloc() : memref<16xi32>
  scf.for %i = %c0 to %c16 step %c1 {
    %n = arith.index_cast %i : index to i32
    memref.store %n, %data[%i] : memref<16xi32>
  }
  %unranked = memref.cast %data : memref<16xi32> to memref<*xi32>
  gpu.host_register %unranked : memref<*xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %bytes
             workgroup(%count : memref<1xi32, #gpu.address_space<workgroup>>) {
    %raw = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %buffer = memref.view %raw[%c0][] : memref<?xi8, #gpu.address_space<workgroup>>
        to memref<16xi32, #gpu.address_space<workgroup>>
    %v = memref.load %data[%tx] : memref<16xi32>
    memref.store %v, %buffer[%tx] : memref<16xi32, #gpu.address_space<workgroup>>
    %first = arith.cmpi eq, %tx, %c0 : index
    scf.if %first {
      %zero = arith.constant 0 : i32
      memref.store %zero, %count[%c0] : memref<1xi32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %c15 = arith.constant 15 : index
    %mirror = arith.subi %c15, %tx : index
    %w = memref.load %buffer[%mirror] : memref<16xi32, #gpu.address_space<workgroup>>
    memref.store %w, %data[%tx] : memref<16xi32>
    gpu.terminator
  }
  // CHECK: [15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
  call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
  return
}
func.func private @printMemrefI32(memref<*xi32>)
