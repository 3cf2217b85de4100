"""scons-mlir-gpu's compiler core: MLIR gpu.modules to host objects, stage by stage, byte-identical to
`mlir-opt --gpu-module-to-binary` (MLIR 22), usable without SCons.

    from mlirgpu import CompileOptions, compile_to_object
    compile_to_object("k.mlir", "k.o", CompileOptions(format="bin", dump_dir="k.dumps"))

The names below are loaded when first used, so `mlirgpu compile` can start its LLVM worker before it imports
the pipeline (the two start-ups overlap).

This package is also the SCons tool `mlirgpu` (`generate`/`exists`, body in mlirgpu.frontends.scons.tool): SCons
loads a tool from its toolpath under the tool's name, which is this package's name, so the tool is the package itself:
`toolpath=[mlirgpu.TOOLPATH]` (the folder holding the package), or `site_scons/site_tools/mlirgpu`, a link to it.
"""
import importlib
import os

from .version import __version__  # noqa: F401 - mlirgpu.__version__

# For `env.Tool('mlirgpu', toolpath=[mlirgpu.TOOLPATH])` in an existing SCons project.
TOOLPATH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_LAZY = {"CompileError": "errors", "CompileOptions": "compile_options", "STAGES": "pipeline.stages",
         "compile_file": "frontends.api", "compile_to_object": "frontends.api", "planned_outputs": "pipeline.scan",
         "add_variables": "frontends.scons.variables"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def generate(env):
    """SCons tool entry point (see mlirgpu.frontends.scons.tool)."""
    from .frontends.scons.tool import generate as generate_tool

    generate_tool(env)


def exists(env):
    """SCons tool entry point (see mlirgpu.frontends.scons.tool)."""
    from .frontends.scons.tool import exists as tool_exists

    return tool_exists(env)


__all__ = ["STAGES", "TOOLPATH", "CompileError", "CompileOptions", "add_variables", "compile_file",
           "compile_to_object", "planned_outputs"]
