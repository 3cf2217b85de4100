// Container module with host code (func.func + gpu.alloc/gpu.memcpy/gpu.launch_func/gpu.wait) launching kernels from two gpu.modules (NVVM).
module attributes {gpu.container_module} {
  func.func @host_pipeline_nvvm(%host: memref<1024xf32>, %alpha: f32) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %n = arith.constant 1024 : i32
    %t0 = gpu.wait async
    %dev, %t1 = gpu.alloc async [%t0] () : memref<1024xf32>
    %t2 = gpu.memcpy async [%t1] %dev, %host : memref<1024xf32>, memref<1024xf32>
    %base = memref.extract_aligned_pointer_as_index %dev : memref<1024xf32> -> index
    %base_i64 = arith.index_cast %base : index to i64
    %ptr = llvm.inttoptr %base_i64 : i64 to !llvm.ptr<1>
    %t3 = gpu.launch_func async [%t2] @host_scale_nvvm::@scale
        blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%n : i32, %alpha : f32, %ptr : !llvm.ptr<1>)
    %t4 = gpu.launch_func async [%t3] @host_offset_nvvm::@add_index
        blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%n : i32, %ptr : !llvm.ptr<1>)
    %t5 = gpu.memcpy async [%t4] %host, %dev : memref<1024xf32>, memref<1024xf32>
    %t6 = gpu.dealloc async [%t5] %dev : memref<1024xf32>
    gpu.wait [%t6]
    return
  }

  gpu.module @host_scale_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @scale(%n: i32, %a: f32, %x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %p = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %r = llvm.fmul %v, %a : f32
      llvm.store %r, %p : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }

  gpu.module @host_offset_nvvm [#nvvm.target<chip = "@CHIP@", O = @O@>] {
    llvm.func @add_index(%n: i32, %x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %p = llvm.getelementptr %x[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %fi = llvm.sitofp %i : i32 to f32
      %r = llvm.fadd %v, %fi : f32
      llvm.store %r, %p : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }
  }
}
