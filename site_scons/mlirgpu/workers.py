"""Worker processes: whole compiles run there, so an LLVM fatal error fails one compile instead of its caller,
and the caller (an SCons thread) only waits, leaving its interpreter free for the other jobs.

Each worker is `python -m mlirgpu.workers`, speaking length-prefixed pickles over a pipe: a request names an
entry point (`ENTRY_POINTS`) and its arguments; while it runs, the worker reports each LLVM step it starts
(`progress`), then replies with the result or the CompileError raised. LLVM's own messages go to a private log
file; when the worker dies, the caller raises a CompileError naming the module and stage it was in and the last
line of that log. Workers are leased one compile at a time and reused, so threads of one build (SCons -j) get
real parallelism without a start-up per compile.
"""
import atexit
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import threading

from .errors import CompileError
from .toolchain import LLVM_MAJOR

_HEADER = struct.Struct("<Q")


def _send(stream, value):
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


class WorkerCrashed(CompileError):
    """The worker process died (LLVM fatal error, signal)."""


class LLVMWorker:
    """One worker process running `mlirgpu.llvm_ops` calls."""

    def __init__(self):
        log = tempfile.NamedTemporaryFile(prefix="mlirgpu-llvm-", suffix=".log", delete=False)
        self.log_path = log.name
        log.close()
        # The worker skips `site` (-S: its start-up, editable-install finders included, is a fifth of a
        # worker's) and gets this process's import path instead, which already holds what site would add.
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        path = dict.fromkeys([package_root] + [os.path.abspath(p) for p in sys.path if p and os.path.exists(p)])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        self.process = subprocess.Popen(
            [sys.executable, "-S", "-m", "mlirgpu.workers", self.log_path, str(LLVM_MAJOR)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        )

    def call(self, function, *args, what="LLVM", where=(None, None)):
        """Run entry point `function(*args)` in the worker, in this process's folder and environment;
        CompileErrors come back as they were raised."""
        try:
            _send(self.process.stdin, (function, args, os.getcwd(), dict(os.environ)))
            while True:
                reply = _receive(self.process.stdout)
                if reply is None or reply[0] != "progress":
                    break
                what, where = reply[1]
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            raise self._crash(what).located(*where)
        status, value = reply
        if status == "ok":
            return value
        if status == "compile-error":
            raise value
        raise CompileError(f"{what}: {value}")

    def _crash(self, what):
        code = self.process.wait()
        reason = f"signal {-code}" if code < 0 else f"exit code {code}"
        tail = ""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as log:
                lines = [line.strip() for line in log if line.strip()]
            tail = lines[-1] if lines else ""
        except OSError:
            pass
        self.close()
        message = f"{what}: LLVM crashed ({reason})" + (f": {tail}" if tail else "")
        return WorkerCrashed(message, fix="this input makes LLVM abort; see the message, or report it upstream")

    @property
    def alive(self):
        return self.process.poll() is None

    def close(self):
        if self.process.poll() is None:
            if not self.process.stdin.closed:
                self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)


_idle = []
_started = []  # every worker this process started (for prestart's count)
_lock = threading.Lock()


def _start():
    worker = LLVMWorker()
    _started.append(worker)
    return worker


def prestart(count):
    """Have `count` workers running, started now, so their Python and LLVM start-up overlaps the caller's own
    work (a build tool reading its build files) instead of delaying the first compiles."""
    with _lock:
        alive = sum(1 for worker in _started if worker.alive)
        _idle.extend(_start() for _ in range(count - alive))


@contextlib.contextmanager
def lease():
    """A worker for one compile, taken from the idle pool or started; returned when the compile ends."""
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None or not worker.alive:
        with _lock:
            worker = _start()
    try:
        yield worker
    finally:
        if worker.alive:
            with _lock:
                _idle.append(worker)


@atexit.register
def _shutdown():
    with _lock:
        for worker in _idle:  # all are told first, so they wind down together
            worker.process.stdin.close()
        while _idle:
            _idle.pop().close()
        _started.clear()


class InProcessLLVM:
    """The LLVM primitives (`mlirgpu.llvm_ops`) as seen by a compile running inside a worker: each call first
    tells the parent which step starts, so a crash in it can be reported by module and stage."""

    def __init__(self, report):
        self._report = report

    def call(self, function, *args, what="LLVM", where=(None, None)):
        from . import llvm_ops

        self._report((what, where))
        try:
            return getattr(llvm_ops, function)(*args)
        except CompileError:
            raise
        except Exception as exc:  # LLVM's diagnostics arrive as RuntimeErrors
            raise CompileError(f"{what}: {exc}") from exc


def _entry_points():
    from . import pipeline

    return {"compile_file": pipeline.compile_here, "compile_to_object": pipeline.compile_to_object_here}


current = None  # the InProcessLLVM of this worker process; None in a parent


def _serve(log_path, expected_major):
    """Worker main loop (runs in the child process)."""
    global current
    protocol_out = os.fdopen(os.dup(1), "wb")
    protocol_in = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    from . import llvm_ops

    llvm_ops.init_worker(log_path, expected_major)
    os.dup2(2, 1)  # LLVM messages on stdout go to the log too, never into the protocol
    current = InProcessLLVM(lambda what: _send(protocol_out, ("progress", what)))
    entry_points = _entry_points()
    while True:
        request = _receive(protocol_in)
        if request is None:
            os._exit(0)  # the caller is done: nothing is pending, and skipping interpreter teardown ends us sooner
        function, args, cwd, environment = request
        if environment != os.environ:
            os.environ.clear()
            os.environ.update(environment)
            from . import toolchain

            toolchain.forget()
        try:
            os.chdir(cwd)
            reply = ("ok", entry_points[function](*args))
        except CompileError as exc:
            reply = ("compile-error", exc)
        except Exception as exc:  # a bug of ours: reported, not hidden
            reply = ("error", f"{type(exc).__name__}: {exc}")
        _send(protocol_out, reply)


if __name__ == "__main__":
    # Serve from the package's own module object, which the pipeline imports (not this __main__ copy).
    from mlirgpu import workers as _package_module

    _package_module._serve(sys.argv[1], int(sys.argv[2]))
