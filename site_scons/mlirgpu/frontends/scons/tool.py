"""The SCons tool `mlirgpu`: `.mlir` sources become host objects, with every stage's output a real target.

    env = Environment(tools=["default", "mlirgpu"])
    obj = env.GpuObject("kernels", "kernels.mlir")         # or a .mlir among the sources of Program,
    env.SharedLibrary("gpu", ["kernels.mlir", "glue.c"])    # StaticLibrary, SharedLibrary, LoadableModule
    lib = env.GpuLibrary("mathlib", "mathlib.mlir")        # device functions: bitcode, for GPU_LINKLIBS=lib

The compiler core does the work; the tool only adapts it to SCons, in the modules beside this one: the GPU_*
variables (variables), the files nodes stand for (nodes), each object's options (options), what an object
declares and scans (emitter), the compile action and its signature (action), device-function libraries
(library), `gpu-artifacts` (artifacts), and this run's compiles (session), which go through
mlirgpu.execution.compiles. The package's `generate` and
`exists` call this module's: the package is the tool (see mlirgpu/__init__.py).
"""
import threading

import SCons.Builder
import SCons.Errors
import SCons.Tool

from ... import errors
from ...errors import CompileError
from ...llvm import toolchain
from ...pipeline.scan import use_cache_file
from . import variables
from .action import compile_action
from .emitter import LIBRARY_SCANNER, gpu_dumps, gpu_object, shared_emitter, static_emitter
from .library import gpu_library, library_builder
from .options import search_environment
from .session import SESSION, will_build


def _warm_identities(tools):
    """The tools' identities, computed ahead for the signatures. A failure here (a bad MLIRGPU_TOOL_TIMEOUT, a
    tool that hangs) is left to the signature or the compile that asks again, which reports it on its target."""
    try:
        toolchain.identities(tools, True)
    except (CompileError, OSError):
        pass


def generate(env):
    errors.set_style("scons")
    try:
        mlir_tools = [toolchain.llvm_tool(name, search_environment(env)) for name in ("mlir-opt", "mlir-translate")]
    except CompileError as exc:
        raise SCons.Errors.StopError(str(exc)) from None
    if will_build() and not toolchain.identities_known(mlir_tools, llvmlite=True):
        # Every signature holds these identities: computed now, while SCons reads the build files. The first
        # build on a machine (or with a new cache folder) hashes a few hundred megabytes of them.
        threading.Thread(target=_warm_identities, args=(mlir_tools,), daemon=True).start()
    variables.publish(env)
    env.SetDefault(MLIRGPUCOMSTR="", OBJSUFFIX=".o")
    try:
        SESSION.start()  # reads MLIRGPU_STATS and MLIRGPU_SERVER*: a bad value stops here, in one line
    except CompileError as exc:
        raise SCons.Errors.StopError(str(exc)) from None
    use_cache_file(env.File("#.sconsign.mlirgpu.json").abspath)  # scans of the sources, kept across runs
    action = compile_action()
    builder = SCons.Builder.Builder(action=action, emitter=static_emitter, src_suffix=".mlir", suffix="$OBJSUFFIX",
                                    single_source=True, source_scanner=LIBRARY_SCANNER)
    env["MLIRGPU_BUILDER"] = builder
    env.AddMethod(gpu_object, "GpuObject")
    env.AddMethod(gpu_dumps, "GpuDumps")
    env["MLIRGPU_LIBRARY_BUILDER"] = library_builder(action)
    env.AddMethod(gpu_library, "GpuLibrary")
    env.AddMethod(variables.setting, "GpuSetting")  # the value the tool uses (command line first), for the build files
    # `.mlir` files are also plain sources of Object/SharedObject and so of every library and program builder.
    static, shared = SCons.Tool.createObjBuilders(env)
    static.add_action(".mlir", action)
    static.add_emitter(".mlir", static_emitter)
    shared.add_action(".mlir", action)
    shared.add_emitter(".mlir", shared_emitter)
    SCons.Tool.SourceFileScanner.add_scanner(".mlir", LIBRARY_SCANNER)


def exists(env):
    try:
        return bool(toolchain.llvm_tool("mlir-opt", search_environment(env)))
    except CompileError:
        return False
