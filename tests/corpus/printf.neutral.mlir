// gpu.printf in target-neutral code: vprintf for NVVM, the HIP hostcall printf of ockl for ROCDL (our lowering
// runs convert-gpu-to-rocdl with runtime=HIP).
module attributes {gpu.container_module} {
  gpu.module @printf_neutral {
    gpu.func @say(%v: f32) kernel {
      %tid = gpu.thread_id x
      gpu.printf "thread %lld value %f\n", %tid, %v : index, f32
      gpu.return
    }
  }
}
