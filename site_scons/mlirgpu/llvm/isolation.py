"""Where LLVM work that must run apart from this process's state runs: the job's runner decides, not LLVM's code.

LLVM 22's SPIR-V back end keeps module state in a static (see mlirgpu.llvm.ops.emit_assembly), so its code
generation runs isolated: `isolated(produce, what)` hands `produce` to the `isolate` of the runner running the
current job (mlirgpu.pipeline.jobrunner; the forked runners of mlirgpu.execution.fanout compute it in a forked
child), set around each job by `isolating`. Outside a job, and with the pipeline's own runner, `produce()` runs
here. So this folder never forks: it receives the callable that may.
"""
import contextlib
import contextvars

_isolate = contextvars.ContextVar("mlirgpu_isolate", default=None)


def isolated(produce, what):
    """`produce()`'s value, computed where the current job's runner isolates work (`what`: the step, for the
    error an isolated failure raises)."""
    isolate = _isolate.get()
    return isolate(produce, what) if isolate is not None else produce()


@contextlib.contextmanager
def isolating(isolate):
    """Run the body with `isolate(produce, what)` as the way isolated LLVM work runs."""
    token = _isolate.set(isolate)
    try:
        yield
    finally:
        _isolate.reset(token)
