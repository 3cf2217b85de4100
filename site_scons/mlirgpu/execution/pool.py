"""A process's LLVM workers: each a handle (`LLVMWorker`) on a worker process, leased one compile at a time from
a `Pool` and reused, so threads of one build (SCons -j) get real parallelism without a start-up per compile.

How a pool starts its workers is its `forking`, `from_server` and `here` (mlirgpu.execution.processes): each on
its own; forked from one zygote of its own, for callers running several compiles at once; from the zygote of a
running compile server of this installation (a build tool: its builds then start no Python or LLVM of their
own); or forked from this process, which is booted (a compile server's runner). When a worker dies mid-compile
the caller raises a CompileError naming the module and stage it was in and the last line of its LLVM log.
"""
import contextlib
import functools
import os
import shutil
import signal
import tempfile
import threading

from . import processes, protocol
from ..errors import CompileError, InternalError
from ..llvm.process import ToolTimedOut
from ..pipeline.translation import OWN


class WorkerCrashed(CompileError):
    """The worker process died (LLVM fatal error, signal)."""


def _answered(given):
    """`given()` for a worker that waits for it, or None if it fails: the worker must be answered either way
    (the value is only a head start, as a build's batch translation is). A translation that ran past the time
    limit is answered as that error, so the worker does not wait for mlir-translate again."""
    try:
        return given()
    except ToolTimedOut as exc:
        return exc
    except Exception:  # noqa: BLE001 - see above
        return None


class LLVMWorker:
    """One worker process running whole compiles, started by `start(log_path)` (a mlirgpu.execution.processes
    function giving its `Popen` or look-alike)."""

    def __init__(self, start, log_folder=None):
        self.log_path = processes.new_log(log_folder)
        # The worker's temporary files live here (mode 700), removed by this side whatever becomes of the worker.
        self.scratch = tempfile.mkdtemp(prefix="mlirgpu-")
        self.process = start(self.log_path)
        self.warming = 0  # warm requests sent whose answers are not read yet

    def call(self, function, *args, what="LLVM", where=(None, None), environ=None, translator=OWN, scan=None):
        """Run entry point `function(*args)` of the pipeline in the worker, in this process's folder and environment
        (or `environ`); CompileErrors come back as they were raised. `translator`: the pipeline's own, or a
        pipeline.translation.Translated whose `given()` runs here when the worker asks for it (only a compile
        that translates does). `scan`: this process's scan of the source (pipeline.scan.known_scan), or None."""
        given = None if translator is OWN else translator.given
        try:
            while self.warming:
                self.warming -= 1
                self._reply(None)
            protocol.send_request(self.process.stdin, function, args, given is not None,
                                  os.environ if environ is None else environ, self.scratch, scan)
            kind, value, what, where = self._reply(given, what, where)
        except (BrokenPipeError, OSError):
            kind = None
        except BaseException:  # Ctrl-C here: the compile is given up, so it must not go on writing outputs
            self._interrupt()
            raise
        if kind is None:
            raise self._crash(what).located(*where)
        if kind == "ok":
            return value
        if kind == "compile-error":
            raise value
        name, trace = value
        raise InternalError(f"internal error in {what} ({name})", detail=trace,
                            fix="please report it with the input; -v or MLIRGPU_DEBUG=1 shows the traceback"
                            ).located(*where)

    def warm(self, tools):
        """Have the worker load LLVM and start the fork servers of `tools` now (worker.warm), without waiting:
        its answer (each one's, when asked again) is read before the next request."""
        try:
            protocol.send_request(self.process.stdin, "warm", (tuple(tools),), False, os.environ, self.scratch)
            self.warming += 1
        except OSError:
            pass  # a worker already gone: its first compile says so

    def _reply(self, given, what="LLVM", where=(None, None)):
        """The worker's answer to the request just sent: (kind, value, and the step it was at), answering its
        requests for the caller's translation on the way; kind None when the pipe failed."""
        while True:
            kind, value = protocol.receive_from_worker(self.process.stdout)
            if kind == "hello":  # a forked worker's pid, written by the zygote
                self.process.pid = value
            elif kind == "ask":
                protocol.send_answer(self.process.stdin, _answered(given))
            elif kind == "progress":
                what, where = value
            else:
                return kind, value, what, where

    def _interrupt(self):
        """End a worker whose compile its caller gave up: interrupted as Ctrl-C does it (its atomic writes then
        leave no temporary file), killed if it does not end, waited for (it writes nothing after this returns)
        and removed."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(OSError, TypeError):  # TypeError: a forked worker's pid not yet told
            os.kill(self.process.pid, signal.SIGINT)
        processes.end(self.process)
        self.close()

    def _crash(self, what):
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # a worker still running (the pipe failed on our side) ends on EOF
        code = processes.end(self.process)
        if code is None or isinstance(code, str):  # a forked worker whose status could not be known
            reason = code or "exit status unknown"
        else:
            reason = f"signal {-code}" if code < 0 else f"exit code {code}"
        tail = ""
        try:
            log_path = getattr(self.process, "log_path", None) or self.log_path  # the zygote's if never forked
            with open(log_path, encoding="utf-8", errors="replace") as log:
                lines = [line.strip() for line in log if line.strip()]
            tail = lines[-1] if lines else ""
        except OSError:
            pass
        self.close()
        message = f"{what}: LLVM crashed ({reason})" + (f": {tail}" if tail else "")
        from ..targets import TARGETS  # only here: a crash is rare, and the worker's start-up stays small

        known = next((fix for target in TARGETS.values() if (fix := target.codegen.failure_fix(tail))), None)
        return WorkerCrashed(message,
                             fix=known or "this input makes LLVM abort; see the message, or report it upstream")

    @property
    def alive(self):
        return self.process.poll() is None

    def close(self, wait=True):
        """End the worker (its input closed; waited for, unless `wait` is False: an idle worker then ends on its
        own, or with this process) and remove its log and scratch folder."""
        if self.process.poll() is None:
            if not self.process.stdin.closed:
                self.process.stdin.close()
            if wait:
                processes.end(self.process)
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)
        shutil.rmtree(self.scratch, ignore_errors=True)


class Pool:
    """Workers leased one compile at a time, started as the pool's settings say when none is idle."""

    def __init__(self):
        self.forking = False  # fork workers from one zygote of this pool's, rather than start each on its own
        self.from_server = False  # take the zygote from the running compile server, when there is one
        self.here = False  # fork workers from this process (it is booted)
        # Fork workers from this process, to boot in the child (a command's own process): the tools whose fork
        # servers the child starts as it boots, or None.
        self.booting_here = None
        self.log_folder = None  # where workers keep their LLVM logs (None: the temporary folder)
        self.zygote = None  # the zygote workers are forked from now, or None
        self._idle = []
        self._started = []  # every worker this pool started (for prestart's count)
        self._lock = threading.Lock()

    def _start(self, warm=None):
        if self.here:
            worker = LLVMWorker(processes.fork_here, self.log_folder)
        elif self.booting_here is not None and threading.active_count() == 1:  # a threaded one's fork could deadlock
            worker = LLVMWorker(functools.partial(processes.fork_booting, tools=self.booting_here), self.log_folder)
        else:
            if self.zygote is not None and self.zygote.process.poll() is not None:
                self.zygote.close()
                self.zygote = None
            if self.zygote is None and self.from_server:
                self.zygote = processes.Zygote.from_server()
            if self.zygote is None and self.forking:  # a fork of a threaded process could deadlock: spawned then
                start = processes.Zygote.fork_here if threading.active_count() == 1 else processes.Zygote.spawn
                self.zygote = start(self.log_folder, llvm=warm is not None)
            worker = LLVMWorker(self.zygote.fork if self.zygote else processes.spawn_worker, self.log_folder)
        self._started.append(worker)
        return worker

    def prestart(self, count, warm=None):
        """Have `count` workers running, started now, so their start-up overlaps the caller's own work (a build
        tool reading its build files) instead of delaying the first compiles; with `warm` (tool names), each
        one started now also loads LLVM and starts those tools' fork servers meanwhile (LLVMWorker.warm)."""
        if self.here:
            return  # a worker forked when needed starts at once, and inherits what this process has read by then
        with self._lock:
            alive = sum(1 for worker in self._started if worker.alive)
            started = [self._start(warm) for _ in range(count - alive)]
            if warm is not None:
                for worker in started:
                    worker.warm(warm)
            self._idle.extend(started)

    def warm_started(self, tools):
        """Have every worker started and idle start the fork servers of `tools` too (LLVMWorker.warm)."""
        with self._lock:
            for worker in self._idle:
                if worker.alive:
                    worker.warm(tools)

    def warm(self):
        """Whether a started worker waits for a compile (a compile server's runner keeps one): then nothing starts
        while the caller works, and work done ahead of the compile overlaps nothing."""
        with self._lock:
            return any(worker.alive for worker in self._idle)

    @contextlib.contextmanager
    def lease(self):
        """A worker for one compile, taken from the idle ones or started; returned when the compile ends."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is not None and not worker.alive:
            worker.close()
            worker = None
        if worker is None:
            with self._lock:
                worker = self._start()
        try:
            yield worker
        finally:
            if worker.alive:
                with self._lock:
                    self._idle.append(worker)

    def new_command(self):
        """A compile server's runner starts a command: each idle worker gets a scratch folder in the command's
        temporary folder (its TMPDIR; end_command removes it) and an empty LLVM log (a crash's message must be
        this command's)."""
        with self._lock:
            for worker in self._idle:
                worker.scratch = tempfile.mkdtemp(prefix="mlirgpu-")
                with contextlib.suppress(OSError):
                    os.truncate(worker.log_path, 0)  # the worker appends (O_APPEND): it writes from 0 again

    def end_command(self):
        """A compile server's runner ended a command: the idle workers' scratch folders go."""
        with self._lock:
            for worker in self._idle:
                shutil.rmtree(worker.scratch, ignore_errors=True)

    def shutdown(self, wait=True):
        """End every idle worker and the zygote (they are told together, so they wind down together), and remove
        their files; without waiting for the workers' ends if `wait` is False."""
        with self._lock:
            for worker in self._idle:  # all are told first, so they wind down together
                worker.process.stdin.close()
            while self._idle:
                self._idle.pop().close(wait)
            self._started.clear()
            if self.zygote is not None:
                self.zygote.close()
                self.zygote = None
