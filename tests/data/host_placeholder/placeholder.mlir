module attributes {gpu.container_module} {
  llvm.func @main() {
    %c1 = llvm.mlir.constant(1 : index) : i64
    gpu.launch_func @k::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64
    gpu.launch_func @j::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64
    gpu.launch_func @k::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) : i64
    llvm.return
  }
  gpu.binary @k [#gpu.object<#nvvm.target<chip = "sm_80">, bin = "\6d\6c\69\72\67\70\75\2e\70\6c\61\63\65\68\6f\6c\64\65\72\2e\30\31\32\33\34\35\36\37\38\39\61\62\63\64\65\66\2e\30\30\30\30\30\30">]
  gpu.binary @j [#gpu.object<#nvvm.target<chip = "sm_80">, properties = {O = 3 : i32}, assembly = "\6d\6c\69\72\67\70\75\2e\70\6c\61\63\65\68\6f\6c\64\65\72\2e\30\31\32\33\34\35\36\37\38\39\61\62\63\64\65\66\2e\30\30\30\30\30\31">]
}
