"""scons-mlir-gpu's compiler core: MLIR gpu.modules to host objects, stage by stage, byte-identical to
`mlir-opt --gpu-module-to-binary` (MLIR 22), usable without SCons.

    from mlirgpu import CompileOptions, compile_to_object
    compile_to_object("k.mlir", "k.o", CompileOptions(format="bin", dump_dir="k.dumps"))

The names below are loaded when first used, so `mlirgpu compile` can start its LLVM worker before it imports
the pipeline (the two start-ups overlap).
"""
import importlib
import os

__version__ = "0.1.0"

# For `env.Tool('mlirgpu', toolpath=[mlirgpu.TOOLPATH])` in an existing SCons project: the tool ships inside
# the installed package (mlirgpu/site_tools), and lives in site_scons/site_tools in a checkout.
_HERE = os.path.dirname(os.path.abspath(__file__))
TOOLPATH = next(
    path for path in (os.path.join(_HERE, "site_tools"), os.path.join(os.path.dirname(_HERE), "site_tools"))
    if os.path.isdir(os.path.join(path, "mlirgpu"))
)

_LAZY = {"CompileError": "errors", "CompileOptions": "options", "STAGES": "pipeline", "compile_file": "pipeline",
         "compile_to_object": "pipeline"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["STAGES", "TOOLPATH", "CompileError", "CompileOptions", "compile_file", "compile_to_object"]
