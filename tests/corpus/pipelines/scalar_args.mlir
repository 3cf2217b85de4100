// RUN: mlir-opt %s -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-features=+ptx80 cubin-format=fatbin" \
// RUN: | mlir-runner --shared-libs=%mlir_cuda_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Scalars of several widths passed from the host to the kernel as launch arguments (as a program's
// command-line values would be): i64, i32, i16, f64, f32 and index, combined on the device into one result.
module attributes {gpu.container_module} {
  gpu.module @args {
    gpu.func @combine(%wide: i64, %word: i32, %half: i16, %dbl: f64, %flt: f32, %n: index,
                      %out: memref<?xf64>) kernel {
      %tid = gpu.thread_id x
      %h = arith.extsi %half : i16 to i32
      %s = arith.addi %word, %h : i32
      %s64 = arith.extsi %s : i32 to i64
      %t = arith.muli %s64, %wide : i64
      %tf = arith.sitofp %t : i64 to f64
      %ff = arith.extf %flt : f32 to f64
      %a = arith.addf %tf, %ff : f64
      %b = arith.mulf %a, %dbl : f64
      %in = arith.cmpi ult, %tid, %n : index
      scf.if %in {
        memref.store %b, %out[%tid] : memref<?xf64>
      }
      gpu.return
    }
  }
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c32 = arith.constant 32 : index
    %wide = arith.constant 3 : i64
    %word = arith.constant 5 : i32
    %half = arith.constant -2 : i16
    %dbl = arith.constant 0.5 : f64
    %flt = arith.constant 1.0 : f32
    %out = memref.alloc(%c3) : memref<?xf64>
    %unranked = memref.cast %out : memref<?xf64> to memref<*xf64>
    gpu.host_register %unranked : memref<*xf64>
    gpu.launch_func @args::@combine blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1)
        args(%wide : i64, %word : i32, %half : i16, %dbl : f64, %flt : f32, %c3 : index, %out : memref<?xf64>)
    // CHECK: [5, 5, 5]
    call @printMemrefF64(%unranked) : (memref<*xf64>) -> ()
    return
  }
  func.func private @printMemrefF64(memref<*xf64>)
}
