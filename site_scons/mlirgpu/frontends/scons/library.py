"""`env.GpuLibrary('mathlib', 'mathlib.mlir')`: device functions written in MLIR, built into bitcode libraries
that kernels in other files link with `GPU_LINKLIBS=lib` (mlirgpu.pipeline.library does the compile).

The result is the library's bitcode nodes, one per target (and per chip, for a target built for several:
`mathlib.<target>[.<chip>].bc`, as the scan predicts them), so a kernel's link takes the file of its own target
and chip among them. They are targets of one compile like an object's, with the dumps (GPU_DUMP) and the record
beside them in `mathlib.dumps/`: SCons rebuilds, cleans and caches them, and a kernel linking them is rebuilt
when their bytes change, not when only their source's comments do.
"""
import SCons.Builder

from ...errors import CompileError
from ...pipeline.scan import planned_libraries
from ...pipeline.stages import LIBRARY
from .emitter import LIBRARY_SCANNER, declared, link_nodes
from .nodes import object_paths, source_path
from .options import object_options


def _emitter(target, source, env):
    """The library's bitcode files (and dumps) as the compile's targets; the prefix (`mathlib`) is what `-o` names."""
    prefix = target[0]
    _header, dump_dir = object_paths(env, prefix)
    given = {"mlirgpu_paths": (None, dump_dir), "mlirgpu_emit": LIBRARY, "mlirgpu_libs": link_nodes(env),
             "mlirgpu_output": prefix.path, "shared": False}
    for name, value in given.items():
        setattr(prefix.attributes, name, value)
    try:
        options = object_options(env, [prefix], source)
    except CompileError:
        options = None  # the compile reports it
    files = planned_libraries(source_path(source[0], absolute=True), prefix.abspath, options) if options else []
    outputs = [env.File(path) for path, _target, _chip in files] or [prefix]
    for name, value in given.items():
        setattr(outputs[0].attributes, name, value)
    outputs[0].attributes.mlirgpu_outputs = len(outputs)
    return declared(env, outputs, [], dump_dir, source), source


def library_builder(action):
    return SCons.Builder.Builder(action=action, emitter=_emitter, src_suffix=".mlir", single_source=True,
                                 source_scanner=LIBRARY_SCANNER)


def gpu_library(env, target=None, source=None, **overrides):
    """`env.GpuLibrary(name, source)`: the library's bitcode nodes (GPU_LINKLIBS takes them as they are)."""
    nodes = env["MLIRGPU_LIBRARY_BUILDER"](env, target, source, **overrides)
    outputs = []
    for node in nodes:
        first = node.get_executor().get_all_targets()[0]
        if node in first.get_executor().get_all_targets()[: getattr(first.attributes, "mlirgpu_outputs", 1)]:
            outputs.append(node)
    return outputs
