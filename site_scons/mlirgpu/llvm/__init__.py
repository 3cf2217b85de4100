"""LLVM in process (llvmlite) and the external tools: finding, identifying and running them."""
