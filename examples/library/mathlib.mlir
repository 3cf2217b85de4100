// A device-function library in target-neutral MLIR: no kernel, only functions that kernels in other files call.
// Built for whichever GPU_TARGET the build uses (env.GpuLibrary): one bitcode file per target, which the
// kernels link (GPU_LINKLIBS). Its external functions are what it exports; an internal one stays inside it.
module attributes {gpu.container_module} {
  gpu.module @mathlib {
    // softplus(x) = log(1 + e^x)
    func.func @softplus(%x: f32) -> f32 {
      %e = math.exp %x : f32
      %r = math.log1p %e : f32
      return %r : f32
    }
    // a * x + y
    func.func @axpy(%a: f32, %x: f32, %y: f32) -> f32 {
      %m = arith.mulf %a, %x : f32
      %r = arith.addf %m, %y : f32
      return %r : f32
    }
    // (x - lo) / (hi - lo), clamped to [0, 1]
    func.func @unit_range(%x: f32, %lo: f32, %hi: f32) -> f32 {
      %d = arith.subf %x, %lo : f32
      %w = arith.subf %hi, %lo : f32
      %q = arith.divf %d, %w : f32
      %r = call @clamp01(%q) : (f32) -> f32
      return %r : f32
    }
    func.func private @clamp01(%x: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %a = arith.maximumf %x, %zero : f32
      %b = arith.minimumf %a, %one : f32
      return %b : f32
    }
  }
}
