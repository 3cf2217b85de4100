"""The compiler core as a Python API: each compile runs in a worker process (mlirgpu.execution.compiles), so an
LLVM abort fails that compile, not the caller, and calls from several threads run in parallel.

    from mlirgpu import CompileOptions, compile_to_object
    compile_to_object("k.mlir", "k.o", CompileOptions(format="bin", dump_dir="k.dumps"))
"""
from ..execution import compiles
from ..pipeline.planning import check_options


def compile_file(source, options, environment=None):
    """Compile every gpu.module of `source`: the host object's bytes, the jobs, dumps and warnings (a
    pipeline.CompileResult). `environment`: the one tools are found in (default: this process's)."""
    options = check_options(source, options)  # the one check: a bad option fails here, before a worker starts
    return compiles.compile_file(source, options, environment)


def compile_to_object(source, output, options, environment=None):
    """Compile `source` and write the host object (and the C header and depfile, when asked) atomically; the
    CompileResult without bytes (the object's, the binaries' and the modules' text are in the files written,
    and never held all at once for a file of many modules): `compile_file` gives them in memory."""
    options = check_options(source, options)
    return compiles.compile_to_object(source, output, options, environment)
