"""One compile of a `.mlir` file, stage by stage as upstream's `gpu-module-to-binary` does it."""
