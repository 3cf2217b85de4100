"""The compiler core as a Python API: each compile runs in a worker process (mlirgpu.execution.workers), so an LLVM abort
fails that compile, not the caller, and calls from several threads run in parallel.

    from mlirgpu import CompileOptions, compile_to_object
    compile_to_object("k.mlir", "k.o", CompileOptions(format="bin", dump_dir="k.dumps"))
"""
from ..execution import workers
from ..pipeline.planning import check_options


def compile_file(source, options, environment=None):
    """Compile every gpu.module of `source`: the host object's bytes, the jobs, dumps and warnings (a
    pipeline.CompileResult). `environment`: the one tools are found in (default: this process's)."""
    check_options(source, options)  # a bad option fails here, before a worker starts
    with workers.lease() as worker:
        return worker.call("compile_file", source, options, what=source, where=(source, None), environ=environment)


def compile_to_object(source, output, options, pretranslated=None, environment=None):
    """Compile `source` and write the host object (and the C header and depfile, when asked) atomically.

    `pretranslated`: this source's entry of batch.translate_many, when a build translated several at once, or a
    function giving it (or None), called only if the compile translates (its compile entry is not cached)."""
    check_options(source, options)
    answer = pretranslated if callable(pretranslated) or pretranslated is None else (lambda: pretranslated)
    with workers.lease() as worker:
        return worker.call("compile_to_object", source, output, options, workers.AskCaller() if answer else None,
                           what=source, where=(source, None), environ=environment, answer=answer)
