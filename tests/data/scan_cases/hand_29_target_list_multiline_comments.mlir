module attributes {gpu.container_module} {
  gpu.module @k [ // first target ]]] {{
      #nvvm.target<chip = "sm_80", features = "+ptx80">,
      #nvvm.target<chip = "sm_90">  // second ]
  ] {
    llvm.func @kernel(%arg0: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
