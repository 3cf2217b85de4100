"""Worker processes for LLVM work, so an LLVM fatal error fails one compile instead of its caller.

Each worker is `python -m mlirgpu.workers`, speaking length-prefixed pickles over a pipe: a request names a
function of `mlirgpu.llvm_ops` and its arguments, the reply is its result or the exception it raised. LLVM's own
messages go to a private log file; when the worker dies, the caller raises a CompileError naming the module,
the stage and the last lines of that log. Workers are leased one compile at a time (a job's LLVM module lives in
one process) and reused, so threads of one build (SCons -j) get real parallelism without start-up per stage.
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
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlirgpu.workers", self.log_path, str(LLVM_MAJOR)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
        )

    def call(self, function, *args, what="LLVM"):
        try:
            _send(self.process.stdin, (function, args))
            reply = _receive(self.process.stdout)
        except (BrokenPipeError, OSError):
            reply = None
        if reply is None:
            raise self._crash(what)
        status, value = reply
        if status == "ok":
            return value
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
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)


_idle = []
_lock = threading.Lock()


@contextlib.contextmanager
def lease():
    """A worker for one compile, taken from the idle pool or started; returned when the compile ends."""
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None or not worker.alive:
        worker = LLVMWorker()
    try:
        yield worker
    finally:
        if worker.alive:
            with _lock:
                _idle.append(worker)


@atexit.register
def _shutdown():
    with _lock:
        while _idle:
            _idle.pop().close()


def _serve(log_path, expected_major):
    """Worker main loop (runs in the child process)."""
    protocol_out = os.fdopen(os.dup(1), "wb")
    protocol_in = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    from . import llvm_ops

    llvm_ops.init_worker(log_path, expected_major)
    os.dup2(2, 1)  # LLVM messages on stdout go to the log too, never into the protocol
    while True:
        request = _receive(protocol_in)
        if request is None:
            return
        function, args = request
        try:
            reply = ("ok", getattr(llvm_ops, function)(*args))
        except Exception as exc:  # reported to the caller, which owns error handling
            reply = ("error", f"{exc}")
        _send(protocol_out, reply)


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]))
