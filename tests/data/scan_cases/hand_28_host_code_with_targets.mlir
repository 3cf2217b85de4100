module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_80">, #nvvm.target<chip = "sm_90">] {
    llvm.func @hello() attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@hello blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
