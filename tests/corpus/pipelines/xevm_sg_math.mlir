// RUN: mlir-opt %s --gpu-lower-to-xevm-pipeline="xegpu-op-level=subgroup" \
// RUN: | mlir-runner --shared-libs=%mlir_levelzero_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Subgroup-level XeGPU kernel: each subgroup of 16 lanes takes an 8x16 tile (one instruction's worth, #inst), with
// math and arith ops on the whole tile. Upstream's lowering leaves lane layouts on the llvm.intr.* ops.
#inst = #xegpu.layout<inst_data = [8, 16]>
module @sg_math attributes {gpu.container_module} {
  gpu.module @kernel {
    gpu.func @tile_math(%src: memref<256x256xf32>, %dst: memref<256x256xf32>) kernel {
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %row = arith.muli %bx, %c8 : index
      %col = arith.muli %by, %c16 : index
      %in = xegpu.create_nd_tdesc %src : memref<256x256xf32> -> !xegpu.tensor_desc<8x16xf32, #inst>
      %x = xegpu.load_nd %in[%row, %col] : !xegpu.tensor_desc<8x16xf32, #inst> -> vector<8x16xf32>
      %e = math.exp %x {layout_result_0 = #inst} : vector<8x16xf32>
      %a = math.absf %x {layout_result_0 = #inst} : vector<8x16xf32>
      %s = arith.addf %e, %a {layout_result_0 = #inst} : vector<8x16xf32>
      %out = xegpu.create_nd_tdesc %dst : memref<256x256xf32> -> !xegpu.tensor_desc<8x16xf32, #inst>
      xegpu.store_nd %s, %out[%row, %col] : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32, #inst>
      gpu.return
    }
  }

  func.func @main() attributes {llvm.emit_c_interface} {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %src = gpu.alloc () : memref<256x256xf32>
    %dst = gpu.alloc () : memref<256x256xf32>
    gpu.launch_func @kernel::@tile_math blocks in (%c32, %c16, %c1) threads in (%c16, %c1, %c1) args(%src : memref<256x256xf32>, %dst : memref<256x256xf32>)
    gpu.wait
    gpu.dealloc %src : memref<256x256xf32>
    gpu.dealloc %dst : memref<256x256xf32>
    return
  }
}
