"""Fork and return: the one helper that computes a value in a forked child of this process and brings it back.

Every fork whose child computes something and ends uses it: the forked stage runners of a file of many modules
(mlirgpu.execution.fanout), and code generation isolated from this process's LLVM state (the runners' `isolate`,
which mlirgpu.llvm.ops calls for LLVM 22's SPIR-V back end). The child starts from this process's state (LLVM
loaded, the translations in memory, in pages it shares with the parent), dies with the parent (the kernel's
parent-death signal), collects no garbage (nothing it makes outlives it, and the parent's pages stay shared),
pickles its value, or the exception it raised, back over a pipe, and ends without Python's clean-up (no buffer
flushed twice). The parent gets the value, or the exception raised again; a child that died without a word (a
signal, an LLVM abort) is a `ChildDied`, with what it wrote on stderr when that was captured.
"""
import gc
import os
import pickle
import signal
import tempfile

_PR_SET_PDEATHSIG = 1


class ChildDied(RuntimeError):
    """A forked child ended without sending its value back: killed by a signal, or an exit of its own (LLVM's
    fatal errors end the process). `messages`: what it wrote on stderr, when that was captured."""

    def __init__(self, how, messages=""):
        first = next((line for line in messages.splitlines() if line.strip()), "")
        super().__init__(how + (f": {first}" if first else ""))
        self.how = how
        self.messages = messages


class Child:
    """A forked child computing `produce()`; its read end (`fileno`) polls readable until it ended. `close`: the
    descriptors the child closes first (the read ends of its siblings); `messages`: a file its stderr goes to."""

    def __init__(self, produce, close=(), messages=None):
        read_fd, write_fd = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(read_fd)
            _child(produce, write_fd, close, messages)  # never returns
        os.close(write_fd)
        self.fd = read_fd
        self._chunks = []

    def fileno(self):
        return self.fd

    def read(self):
        """Read what the child sent so far; whether it is done (then `result` does not block)."""
        data = os.read(self.fd, 1 << 20)
        if data:
            self._chunks.append(data)
            return False
        return True

    def result(self):
        """The child's value, or its exception raised here (ChildDied when it sent none); reaps it."""
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        sent = b"".join(self._chunks)
        self._chunks = []
        if status != 0 or not sent:
            how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit status {os.waitstatus_to_exitcode(status)}")
            raise ChildDied(how)
        done, value = pickle.loads(sent)
        if not done:
            raise value
        return value

    def kill(self):
        """End the child now and reap it (this process is interrupted: its value is not wanted)."""
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def call(produce):
    """`produce()` computed in a forked child: its value, or its exception raised here. What the child writes on
    stderr is written here afterwards (as it would have been, in order); a child that died without sending its
    value is a ChildDied carrying those messages (LLVM's `LLVM ERROR: ...` before it aborts)."""
    with tempfile.TemporaryFile() as messages:
        child = Child(produce, messages=messages)
        while not child.read():
            pass
        try:
            return child.result()
        except ChildDied as exc:
            raise ChildDied(exc.how, _said(messages)) from None
        finally:
            said = _said(messages)
            if said:
                os.write(2, (said + "\n").encode("utf-8"))


def _said(messages):
    messages.seek(0)
    return messages.read().decode("utf-8", "replace").strip()


def _child(produce, write_fd, close, messages):
    """The child: `produce()`'s value, or its exception, pickled on `write_fd`; it never returns."""
    status = 1
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # ends with its parent
        for fd in close:
            os.close(fd)
        if messages is not None:
            os.dup2(messages.fileno(), 2)
        gc.disable()
        try:
            sent = (True, produce())
        except Exception as exc:  # noqa: BLE001 - raised again in the parent
            sent = (False, exc)
        try:
            data = pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - an exception that does not pickle: said as the type and text
            data = pickle.dumps((False, RuntimeError(f"{type(sent[1]).__name__}: {sent[1]}")))
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view) :]
        status = 0
    except BaseException:  # noqa: BLE001 - the parent sees the exit status
        status = 1
    finally:
        os._exit(status)
