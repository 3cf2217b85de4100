// RUN: mlir-opt %s --gpu-lower-to-xevm-pipeline="xegpu-op-level=workgroup" \
// RUN: | mlir-runner --shared-libs=%mlir_levelzero_runtime --shared-libs=%mlir_runner_utils --entry-point-result=void \
// RUN: | FileCheck %s
// Workgroup-level XeGPU kernels: element-wise math on a 64x32 tile distributed over a 4x2 subgroup grid by the
// #wg layout. Upstream's lowering leaves the layouts on the llvm.intr.* ops that the math ops become.
#wg = #xegpu.layout<sg_layout = [4, 2], sg_data = [16, 16], inst_data = [8, 16]>
module @wg_math attributes {gpu.container_module} {
  gpu.module @exp_module {
    gpu.func @tile_exp(%src: memref<64x32xf32>, %dst: memref<64x32xf32>) kernel {
      %c0 = arith.constant 0 : index
      %in = xegpu.create_nd_tdesc %src : memref<64x32xf32> -> !xegpu.tensor_desc<64x32xf32, #wg>
      %x = xegpu.load_nd %in[%c0, %c0] : !xegpu.tensor_desc<64x32xf32, #wg> -> vector<64x32xf32>
      %y = math.exp %x {layout_result_0 = #wg} : vector<64x32xf32>
      %out = xegpu.create_nd_tdesc %dst : memref<64x32xf32> -> !xegpu.tensor_desc<64x32xf32, #wg>
      xegpu.store_nd %y, %out[%c0, %c0] : vector<64x32xf32>, !xegpu.tensor_desc<64x32xf32, #wg>
      gpu.return
    }
  }

  gpu.module @max_module {
    // The same tile through a fast-math maximum of two inputs and a square root.
    gpu.func @tile_max_sqrt(%a: memref<64x32xf32>, %b: memref<64x32xf32>, %dst: memref<64x32xf32>) kernel {
      %c0 = arith.constant 0 : index
      %ta = xegpu.create_nd_tdesc %a : memref<64x32xf32> -> !xegpu.tensor_desc<64x32xf32, #wg>
      %tb = xegpu.create_nd_tdesc %b : memref<64x32xf32> -> !xegpu.tensor_desc<64x32xf32, #wg>
      %va = xegpu.load_nd %ta[%c0, %c0] : !xegpu.tensor_desc<64x32xf32, #wg> -> vector<64x32xf32>
      %vb = xegpu.load_nd %tb[%c0, %c0] : !xegpu.tensor_desc<64x32xf32, #wg> -> vector<64x32xf32>
      %m = arith.maximumf %va, %vb fastmath<fast> {layout_result_0 = #wg} : vector<64x32xf32>
      %r = math.sqrt %m {layout_result_0 = #wg} : vector<64x32xf32>
      %out = xegpu.create_nd_tdesc %dst : memref<64x32xf32> -> !xegpu.tensor_desc<64x32xf32, #wg>
      xegpu.store_nd %r, %out[%c0, %c0] : vector<64x32xf32>, !xegpu.tensor_desc<64x32xf32, #wg>
      gpu.return
    }
  }

  func.func @main() attributes {llvm.emit_c_interface} {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %a = gpu.alloc () : memref<64x32xf32>
    %b = gpu.alloc () : memref<64x32xf32>
    %c = gpu.alloc () : memref<64x32xf32>
    // 8 subgroups of 16 lanes, linearized along x.
    gpu.launch_func @exp_module::@tile_exp blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%a : memref<64x32xf32>, %c : memref<64x32xf32>)
    gpu.launch_func @max_module::@tile_max_sqrt blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%a : memref<64x32xf32>, %b : memref<64x32xf32>, %c : memref<64x32xf32>)
    gpu.dealloc %a : memref<64x32xf32>
    gpu.dealloc %b : memref<64x32xf32>
    gpu.dealloc %c : memref<64x32xf32>
    return
  }
}
