// RUN: mlir-opt %s --convert-scf-to-cf --convert-gpu-to-nvvm --gpu-to-llvm --reconcile-unrealized-casts \
// RUN:   --gpu-module-to-binary=format=isa \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// No attach pass: the gpu.module carries its own #nvvm.target (chip, PTX version and O level written in the
// file), double-dash flags with an unquoted `format=isa`, as upstream's TMA tests spell them.
module attributes {gpu.container_module} {
  gpu.module @stencil [#nvvm.target<O = 1, chip = "sm_89", features = "+ptx78">] {
    gpu.func @blur(%in: memref<34xf32>, %out: memref<32xf32>) kernel {
      %i = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %mid = arith.addi %i, %c1 : index
      %right = arith.addi %i, %c2 : index
      %a = memref.load %in[%i] : memref<34xf32>
      %b = memref.load %in[%mid] : memref<34xf32>
      %c = memref.load %in[%right] : memref<34xf32>
      %ab = arith.addf %a, %b : f32
      %abc = arith.addf %ab, %c : f32
      %third = arith.constant 3.0 : f32
      %avg = arith.divf %abc, %third : f32
      memref.store %avg, %out[%i] : memref<32xf32>
      gpu.return
    }
  }
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c34 = arith.constant 34 : index
    %in = memref.alloc() : memref<34xf32>
    %out = memref.alloc() : memref<32xf32>
    scf.for %i = %c0 to %c34 step %c1 {
      %n = arith.index_cast %i : index to i32
      %f = arith.sitofp %n : i32 to f32
      memref.store %f, %in[%i] : memref<34xf32>
    }
    %uin = memref.cast %in : memref<34xf32> to memref<*xf32>
    %uout = memref.cast %out : memref<32xf32> to memref<*xf32>
    gpu.host_register %uin : memref<*xf32>
    gpu.host_register %uout : memref<*xf32>
    gpu.launch_func @stencil::@blur blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%in : memref<34xf32>, %out : memref<32xf32>)
    // CHECK: [1, 2, 3, 4,
    call @printMemrefF32(%uout) : (memref<*xf32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
