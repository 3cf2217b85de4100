"""The owner of the llvmlite objects a job keeps between calls: closed explicitly, in a fixed order, when the job
ends (also on error), never by a finalizer.

llvmlite frees an LLVM object in its wrapper's `__del__`. For garbage in a reference cycle (a frame kept by an
exception, a callback holding the module it was given) Python runs those finalizers in no fixed order: a context
freed first frees its modules with it, and a module's own finalizer then frees it again (a crash in
`LLVMPY_DisposeModule`). So every object a job's stages hand each other is owned by the job's arena from the moment
it is made; closing the arena closes target machines first, then modules (newest first), then contexts. A closed
wrapper's finalizer does nothing, so the collector may find the wrappers in any order afterwards. A module linked
into another is consumed by the link (marked so: it is never closed twice). What leaves a job leaves as text or
bytes. Objects that live within one call are closed by a `with` in that call instead.

No LLVM is loaded here: a job whose stages all come from the stage cache opens and closes an empty arena.
"""
import contextvars

# What an object is, in the order the arena closes them: modules before the context that holds them.
MACHINE, MODULE, CONTEXT = range(3)

_current = contextvars.ContextVar("mlirgpu_llvm_arena", default=None)

# The LLVM modules this process holds open now, and the most it held at once since `reset_module_peak`: what a
# compile of many modules keeps at a time (mlirgpu.execution.fanout reports it), whatever the module count.
_modules = {"open": 0, "peak": 0}


class Arena:
    """The llvmlite objects of one job (a context manager: the arena of the code it runs)."""

    def __init__(self):
        self._owned = []  # (kind, object), in the order they were made
        self._token = None

    def own(self, kind, obj):
        """`obj` (a llvmlite object of `kind`), owned by this arena from now on."""
        self._owned.append((kind, obj))
        if kind == MODULE:
            _modules["open"] += 1
            _modules["peak"] = max(_modules["peak"], _modules["open"])
        return obj

    def open_count(self):
        """How many objects of this arena are not closed (0 once the arena is closed)."""
        return sum(1 for _kind, obj in self._owned if not obj.closed)

    def close(self):
        """Close every object: by kind in the order above, the newest first within a kind."""
        for _index, (kind, obj) in sorted(enumerate(self._owned), key=lambda item: (item[1][0], -item[0])):
            if kind == MODULE and not obj.closed:
                _modules["open"] -= 1
            obj.close()

    def __enter__(self):
        self._token = _current.set(self)
        return self

    def __exit__(self, *_exc):
        _current.reset(self._token)
        self.close()


def module_peak():
    """The most LLVM modules this process held open at once since the last `reset_module_peak`."""
    return _modules["peak"]


def reset_module_peak():
    """Start counting the peak again from the modules open now."""
    _modules["peak"] = _modules["open"]


def current():
    """The arena of the code running now; every llvmlite object kept beyond one call is made in one."""
    arena = _current.get()
    if arena is None:
        raise LookupError("an LLVM object made outside a job's arena (mlirgpu.llvm.arena): a bug of ours")
    return arena
