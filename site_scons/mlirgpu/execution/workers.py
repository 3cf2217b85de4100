"""Worker processes: whole compiles run there, so an LLVM fatal error fails one compile instead of its caller,
and the caller (an SCons thread) only waits, leaving its interpreter free for the other jobs.

Each worker is `python -m mlirgpu.execution.workers` (or a fork of one, below), speaking length-prefixed pickles over a
pipe: a request names an entry point of the pipeline (`compile_file`, `compile_to_object`) and its arguments,
the caller's folder, environment, a scratch folder the caller owns, and the caller's umask and resource limits,
which the compile runs with (a worker outlives its callers: a compile server's clients, each with its own); while
it runs, the pipeline reports each step it starts (`progress`), then the worker replies with the result or the
CompileError raised. An argument may be left to the caller (`AskCaller`): the worker asks for it (`ask`) only
if the compile needs it. Workers die with their caller (the kernel's parent-death signal). LLVM's own messages go to a private log
file; when the worker dies, the caller raises a CompileError naming the module and stage it was in and the last
line of that log. Workers are leased one compile at a time and reused, so threads of one build (SCons -j) get
real parallelism without a start-up per compile.

A build running several compiles at once (`forking(True)`) starts one booted process, the zygote, and forks
every worker from it: one Python start-up and one import of the pipeline and the Redis client (about 0.15 s of
CPU) instead of one per worker, at the moment the build itself is busiest, and the workers share the zygote's
pages until they write them. A build's zygote does not load LLVM: its workers load it when a compile needs it,
so the compiles of a clean build whose entries are cached start sooner (the compile server's zygote, booted
once, has it). The workers are the zygote's children, not the caller's: the zygote tells the caller their pids
and exit statuses.
"""
import _socket  # the C module: `socket` itself costs 11 ms of start-up (here and in the zygote) for the same calls
import atexit
import contextlib
import os
import pickle
import queue
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

from ..util import fsutil
from ..llvm import process
from ..errors import CompileError, InternalError
from ..llvm.process import passed_fds
from ..llvm.toolchain import LLVM_MAJOR
from ..pipeline.translation import Translated
from ..version import PACKAGE

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


class AskCaller:
    """A translator argument the worker gets from its caller only when the compile translates: the entry point
    receives a pipeline Translated translator whose `given()` asks the caller, whose `answer` gives the value (a
    build's translation of a source, which a compile whose entry is cached never needs)."""


def _answered(answer):
    """`answer()` for a worker that waits for it, or None if it fails: the worker must be answered either way
    (the value is only a head start, as a build's batch translation is)."""
    try:
        return answer()
    except Exception:  # noqa: BLE001 - see above
        return None


class WorkerCrashed(CompileError):
    """The worker process died (LLVM fatal error, signal)."""


class LLVMWorker:
    """One worker process running `mlirgpu.llvm.ops` calls."""

    def __init__(self, zygote=None):
        self.log_path = _new_log()
        # The worker's temporary files live here (mode 700), removed by this side whatever becomes of the worker.
        self.scratch = tempfile.mkdtemp(prefix="mlirgpu-")
        if zygote == "here":
            self.process = _fork_here(self.log_path)
        elif zygote is None:
            self.process = _spawn(
                _python_argv(self.log_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env=_python_env(),
            )
        else:
            self.process = zygote.fork(self.log_path)

    def call(self, function, *args, what="LLVM", where=(None, None), environ=None, answer=None):
        """Run entry point `function(*args)` in the worker, in this process's folder and environment (or
        `environ`); CompileErrors come back as they were raised. `answer()` gives the argument passed as
        AskCaller(), when the worker asks for it."""
        try:
            _send(self.process.stdin, (function, args, os.getcwd(), dict(os.environ if environ is None else environ),
                                       self.scratch, fsutil.umask(), process.limits()))
            while True:
                reply = _receive(self.process.stdout)
                if reply is not None and reply[0] == "hello":  # a forked worker's pid, written by the zygote
                    self.process.pid = reply[1]
                    continue
                if reply is not None and reply[0] == "ask":
                    _send(self.process.stdin, _answered(answer))
                    continue
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
        name, trace = value
        raise InternalError(f"internal error in {what} ({name})", detail=trace,
                            fix="please report it with the input; -v or MLIRGPU_DEBUG=1 shows the traceback"
                            ).located(*where)

    def _crash(self, what):
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # a worker still running (the pipe failed on our side) ends on EOF
        code = _end(self.process)
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

        known = next((fix for target in TARGETS.values() if (fix := target.failure_fix(tail))), None)
        return WorkerCrashed(message, fix=known or "this input makes LLVM abort; see the message, or report it upstream")

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
                _end(self.process)
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _end(process):
    """Wait for a process told to end (its input closed), killing it after 10 s; its exit status, or None when
    no one can tell any more (a forked worker whose zygote is gone: in a container whose first process reaps
    no orphans, a killed one stays a zombie). Never raises: it runs at exit, after the build's own messages."""
    try:
        return process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        try:
            return process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None


def _new_log():
    log = tempfile.NamedTemporaryFile(prefix="mlirgpu-llvm-", suffix=".log", delete=False, dir=_log_folder)
    log.close()
    return log.name


def _python_argv(*args):
    return [sys.executable, "-S", "-m", "mlirgpu.execution.workers", *args, str(LLVM_MAJOR), str(os.getpid())]


def _spawn(argv, **popen):
    """`subprocess.Popen(argv, **popen)` from this process's main thread or, called from any other, from one
    thread that lasts as long as the process. A worker or zygote dies with its parent (die_with_parent), and
    Linux takes the parent to be the *thread* that started it: one started by a thread that then ends (a build
    tool's job thread when its build ends, an API caller's short-lived thread) would be killed with it, in the
    middle of another thread's compile or before this process's shutdown could end it in order."""
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(argv, **popen)
    with _spawner_lock:
        if not _spawn_requests:
            _spawn_requests.append(queue.SimpleQueue())
            threading.Thread(target=_spawner, args=(_spawn_requests[0],), name="mlirgpu-spawner", daemon=True).start()
    answer = queue.SimpleQueue()
    _spawn_requests[0].put((argv, popen, answer))
    started, value = answer.get()
    if not started:
        raise value
    return value


def _spawner(requests):
    while True:
        argv, popen, answer = requests.get()
        try:
            answer.put((True, subprocess.Popen(argv, **popen)))
        except BaseException as exc:  # noqa: BLE001 - the caller's to raise, in its own thread
            answer.put((False, exc))


_spawner_lock = threading.Lock()
_spawn_requests = []  # the spawner thread's queue, once it runs
os.register_at_fork(after_in_child=_spawn_requests.clear)  # a fork has no spawner thread: it starts its own


def die_with_parent(parent_pid):
    """Have the kernel kill this process when its parent dies (Linux `PR_SET_PDEATHSIG`), so no worker of a
    killed build (`kill -9` of the build alone, not its group) writes into the tree after a new build has begun.
    A parent already gone by now ends this process at once. Elsewhere the pipe EOF ends an idle worker."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def _python_env():
    """The worker skips `site` (-S: its start-up, editable-install finders included, is a fifth of a worker's)
    and gets this process's import path instead, which already holds what site would add."""
    package_root = os.path.dirname(PACKAGE)
    path = dict.fromkeys([package_root] + [os.path.abspath(p) for p in sys.path if p and os.path.exists(p)])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


class _Zygote:
    """A booted worker process that only forks workers (and reaps them, reporting how they ended).

    Requests go over a message-preserving Unix socket: `fork` carries the new worker's two pipe ends and gets no
    answer (the zygote writes the worker's pid into the worker's own pipe, so asking for a worker never waits
    for the zygote's start-up); `wait` is answered with the exit status, as `Popen.returncode` gives it. The
    zygote is a process of ours (`spawn`), or a child of a running compile server (`from_server`), reached
    through the server's socket: a build then starts no Python or LLVM of its own."""

    def __init__(self, socket, process, log_path, own_log=True):
        self.socket = socket
        self.process = process
        self.log_path = log_path
        self.own_log = own_log
        self.lock = threading.Lock()  # pairs each `wait` with its answer; `fork`s are single messages

    @classmethod
    def spawn(cls):
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        log_path = _new_log()
        process = _spawn(
            _python_argv("--zygote", str(theirs.fileno()), log_path), pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_python_env(),
        )
        theirs.close()
        return cls(ours, process, log_path)

    @classmethod
    def from_server(cls):
        """A zygote of the running compile server of this installation, or None (no server, another version)."""
        from . import rendezvous

        if not rendezvous.wanted():
            return None
        try:
            connection = rendezvous.connect(rendezvous.socket_path(rendezvous.folder()))
            if connection is None:
                return None
            rendezvous.request(connection, {"kind": "zygote", "fingerprint": rendezvous.fingerprint()})
            reply = rendezvous.receive(connection)
            connection.settimeout(None)
        except (OSError, ValueError, ConnectionError, rendezvous.Unavailable):
            return None
        if reply.get("kind") != "zygote":
            connection.close()
            return None
        return cls(connection, _ServerZygote(reply["pid"]), reply["log"], own_log=False)

    def fork(self, log_path):
        to_worker, from_us = os.pipe()
        to_us, from_worker = os.pipe()
        try:
            self.socket.sendmsg([pickle.dumps(("fork", log_path))],
                               [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("2i", to_worker, from_worker))])
        except OSError:
            pass  # the worker's pipes read as closed, and its crash report says why
        finally:
            os.close(to_worker)
            os.close(from_worker)
        return _ForkedProcess(self, os.fdopen(from_us, "wb"), os.fdopen(to_us, "rb"))

    def wait(self, pid, timeout):
        """Exit status of worker `pid`; None while it runs after `timeout` seconds (None: do not wait)."""
        try:
            with self.lock:
                self.socket.send(pickle.dumps(("wait", pid, timeout)))
                return pickle.loads(self.socket.recv(4096))
        except (OSError, EOFError, pickle.UnpicklingError):  # the zygote is gone, and what it knew with it
            try:
                os.kill(pid, 0)
                return None
            except OSError:
                return "exit status unknown: the process that forked it is gone"

    def close(self):
        self.socket.close()
        _end(self.process)
        if self.own_log:
            with contextlib.suppress(OSError):
                os.unlink(self.log_path)


class _ServerZygote:
    """What `_Zygote` uses of a `Popen` for a zygote the compile server forked: it ends when its connection
    closes, and its exit status is the server's business."""

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except OSError:
                self.returncode = 0
        return self.returncode

    def wait(self, timeout=None):
        return self.poll() or 0

    def kill(self):
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)


class _Child:
    """What LLVMWorker uses of a `Popen`, for a worker forked from this very process (`fork_here`)."""

    def __init__(self, pid, stdin, stdout):
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired("mlirgpu worker", timeout)
            time.sleep(0.002)
        return self.returncode

    def kill(self):
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)


def _fork_here(log_path):
    """A worker forked from this process, which is booted (LLVM initialized): the compile server's request
    processes start their workers so, in a few milliseconds."""
    to_worker, from_us = os.pipe()
    to_us, from_worker = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            die_with_parent(parent)
            os.close(from_us)
            os.close(to_us)
            _serve_forked([to_worker, from_worker], log_path, _entry_points())
        finally:
            os._exit(1)  # never return into the caller's code
    os.close(to_worker)
    os.close(from_worker)
    return _Child(pid, os.fdopen(from_us, "wb"), os.fdopen(to_us, "rb"))


def _closed_or_ready(stream):
    """Whether reading `stream` would not block: its writer closed it, or sent something. A worker between
    compiles sends nothing."""
    poller = select.poll()
    poller.register(stream.fileno(), select.POLLIN | select.POLLHUP)
    return bool(poller.poll(0))


class _ForkedProcess:
    """What LLVMWorker uses of a `Popen`, for a worker the zygote forked. Its pid is the first message on its
    pipe; until that is read, it counts as running."""

    def __init__(self, zygote, stdin, stdout):
        self.zygote = zygote
        self.stdin = stdin
        self.stdout = stdout
        self.pid = None
        self.returncode = None
        self.log_path = None  # set when the worker was never forked: the zygote's log tells why

    def read_pid(self):
        if self.pid is None and self.returncode is None:
            hello = _receive(self.stdout)
            if hello is not None:
                self.pid = hello[1]
            elif self.zygote.process.poll() is not None:  # the zygote died (at start-up: its log says why)
                self.returncode = self.zygote.process.returncode
                self.log_path = self.zygote.log_path
            else:
                self.returncode = "the zygote could not fork it"
                self.log_path = self.zygote.log_path

    def poll(self):
        """None while the worker runs. Its pipe to us tells (it closes when the worker ends); only then is the
        zygote, which reaps it, asked for its status: a round trip to another process at every lease and
        return, twice per compile, would wait for that process to be scheduled on a busy machine."""
        if self.returncode is None and self.pid is not None and _closed_or_ready(self.stdout):
            self.returncode = self.zygote.wait(self.pid, None)
        return self.returncode

    def wait(self, timeout=None):
        self.read_pid()
        if self.returncode is None:
            self.returncode = self.zygote.wait(self.pid, float("inf") if timeout is None else timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired("mlirgpu worker", timeout)
        return self.returncode

    def kill(self):
        self.read_pid()
        if self.returncode is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)


_idle = []
_started = []  # every worker this process started (for prestart's count)
_lock = threading.Lock()
_log_folder = None  # see keep_logs_in
_zygote = None
_forking = False
_here = False
_server = False


def forking(enabled):
    """Fork workers from one zygote (for callers running several compiles at once) or start each on its own."""
    global _forking
    _forking = enabled


def fork_here():
    """Fork workers from this process, which is booted (the compile server's request processes)."""
    global _here
    _here = True


def use_server(enabled):
    """Take workers from the running compile server of this installation, when there is one (a build tool: its
    builds then start no Python or LLVM of their own); else start them as `forking` says. Its loaded MLIR tools
    serve this process's own runs of them (a build's batches of translations, lowerings) too."""
    global _server
    _server = enabled
    from . import rendezvous
    from ..llvm import toolchain

    if enabled and rendezvous.wanted():
        for tool in ("mlir-translate", "mlir-opt"):
            with contextlib.suppress(CompileError):
                process.supply(toolchain.llvm_tool(tool), _run_from_server)


def _run_from_server(argv):
    """A started run of `argv` from the running compile server, or None (the server's folder is looked up only
    when a translation runs)."""
    from . import rendezvous, served_tools

    try:
        path = rendezvous.socket_path(rendezvous.folder())
    except rendezvous.Unavailable:
        return None
    return served_tools.take_from_server(path, argv)


def _start():
    global _zygote
    if _here:
        worker = LLVMWorker("here")
    else:
        if _zygote is not None and _zygote.process.poll() is not None:
            _zygote.close()
            _zygote = None
        if _zygote is None and _server:
            _zygote = _Zygote.from_server()
        if _zygote is None and _forking:
            _zygote = _Zygote.spawn()
        worker = LLVMWorker(_zygote)
    _started.append(worker)
    return worker


def prestart(count):
    """Have `count` workers running, started now, so their start-up overlaps the caller's own
    work (a build tool reading its build files) instead of delaying the first compiles."""
    if _here:
        return  # a worker forked when needed starts at once, and inherits what this process has read by then
    with _lock:
        alive = sum(1 for worker in _started if worker.alive)
        _idle.extend(_start() for _ in range(count - alive))


def warm():
    """Whether a started worker waits for a compile (a compile server's runner keeps one): then nothing starts
    while the caller works, and work done ahead of the compile overlaps nothing."""
    with _lock:
        return any(worker.alive for worker in _idle)


@contextlib.contextmanager
def lease():
    """A worker for one compile, taken from the idle pool or started; returned when the compile ends."""
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is not None and not worker.alive:
        worker.close()
        worker = None
    if worker is None:
        with _lock:
            worker = _start()
    try:
        yield worker
    finally:
        if worker.alive:
            with _lock:
                _idle.append(worker)


def keep_logs_in(folder):
    """Workers started from now keep their LLVM logs in `folder` (a compile server's runner: the server's own
    folder, since its workers outlive the commands whose temporary folders they serve)."""
    global _log_folder
    _log_folder = folder


def new_command():
    """A compile server's runner starts a command: each idle worker gets a scratch folder in the command's
    temporary folder (its TMPDIR; end_command removes it) and an empty LLVM log (a crash's message must be
    this command's)."""
    with _lock:
        for worker in _idle:
            worker.scratch = tempfile.mkdtemp(prefix="mlirgpu-")
            with contextlib.suppress(OSError):
                os.truncate(worker.log_path, 0)  # the worker appends (O_APPEND): it writes from 0 again


def end_command():
    """A compile server's runner ended a command: the idle workers' scratch folders go."""
    with _lock:
        for worker in _idle:
            shutil.rmtree(worker.scratch, ignore_errors=True)


def current_zygote():
    """The zygote workers are forked from now, or None."""
    return _zygote


@atexit.register
def shutdown(wait=True):
    """End every idle worker and the zygote (at exit; they are told together, so they wind down together), and
    remove their files; without waiting for the workers' ends if `wait` is False."""
    global _zygote
    with _lock:
        for worker in _idle:  # all are told first, so they wind down together
            worker.process.stdin.close()
        while _idle:
            _idle.pop().close(wait)
        _started.clear()
        if _zygote is not None:
            _zygote.close()
            _zygote = None


def _entry_points():
    from ..pipeline import driver as pipeline

    return {"compile_file": pipeline.compile_source, "compile_to_object": pipeline.compile_to_object}


def boot(log_path, expected_major, llvm=True):
    """Import and initialize what a compile needs; LLVM's own messages go to `log_path`. Without `llvm`, LLVM is
    loaded by the first compile that needs it (importing mlirgpu.llvm.ops loads it): a compile whose entry is
    cached never does."""
    from ..cache import remote as remotecache
    from ..llvm import toolchain

    log = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    os.dup2(log, 1)  # LLVM messages on stdout go to the log too, never into a protocol pipe
    os.close(log)
    toolchain.expect_llvm_major(expected_major)
    if llvm:
        from ..llvm import ops as llvm_ops  # noqa: F401 - loads and initializes LLVM
    remotecache.preload()
    return _entry_points()


def _serve(protocol_in, protocol_out, entry_points):
    """Worker main loop (runs in the child process). A compile reports each step it starts to the caller
    (`progress`), which names the step if LLVM ends this process."""
    def report(what, where):
        _send(protocol_out, ("progress", (what, where)))

    def ask():
        _send(protocol_out, ("ask", None))
        return _receive(protocol_in)

    _fork_tools_here()
    while True:
        request = _receive(protocol_in)
        if request is None:
            os._exit(0)  # the caller is done: nothing is pending, and skipping interpreter teardown ends us sooner
        function, args, cwd, environment, scratch, umask, limits = request
        tempfile.tempdir = scratch  # this compile's temporary files, which the caller removes in any case
        if environment != os.environ:
            os.environ.clear()
            os.environ.update(environment)
            from ..llvm import toolchain

            toolchain.forget()
        try:
            os.chdir(cwd)
            args = [Translated(ask) if isinstance(arg, AskCaller) else arg for arg in args]
            with process.taken(umask, limits):  # the caller's: a worker outlives its callers (a server's clients)
                reply = ("ok", entry_points[function](*args, report=report))
        except CompileError as exc:
            reply = ("compile-error", exc)
        except Exception as exc:  # noqa: BLE001 - a bug of ours: reported as one line, traceback kept
            import traceback

            reply = ("error", (type(exc).__name__, "".join(traceback.format_exception(exc))))
        _send(protocol_out, reply)


def _serve_spawned(log_path, expected_major, parent_pid):
    """A worker started on its own: the protocol is on its stdin and stdout."""
    die_with_parent(parent_pid)
    protocol_out = os.fdopen(os.dup(1), "wb")
    protocol_in = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    _serve(protocol_in, protocol_out, boot(log_path, expected_major))


def _serve_zygote(control_fd, log_path, expected_major, parent_pid):
    """A zygote started on its own, by a build: boot without LLVM, then fork workers on request. The build's
    first compiles wait for this boot, and a compile whose entry is cached (a clean build from a team's remote
    cache) needs no LLVM; a worker that needs it loads it itself (about 40 ms and 9 MB of its own)."""
    die_with_parent(parent_pid)
    control = _socket.socket(fileno=control_fd)
    serve_zygote(control, boot(log_path, expected_major, llvm=False))


def serve_zygote(control, entry_points):
    """The zygote's loop, in a booted process: fork a worker per `fork` request, report exit statuses on
    `wait` requests; return never (the process ends when the caller closes `control`)."""
    zygote_pid = os.getpid()
    ended = {}
    while True:
        try:
            data, ancillary, _flags, _address = control.recvmsg(4096, _socket.CMSG_SPACE(2 * 4),
                                                                 _socket.MSG_CMSG_CLOEXEC)
        except OSError:
            data = b""
        if not data:
            os._exit(0)  # the caller is gone; the workers end on their own when their pipes close
        fds = passed_fds(ancillary)
        try:
            request = pickle.loads(data)
        except Exception:  # noqa: BLE001 - not our protocol: the caller is told nothing and its workers fail
            request = ("?",)
        if request[0] == "wait":
            control.send(pickle.dumps(_reap(request[1], request[2], ended)))
            continue
        if request[0] != "fork" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        go_read, go_write = os.pipe()  # the worker starts once its pid is in its pipe, so the pid comes first
        try:
            pid = os.fork()
        except OSError as exc:  # the caller sees the worker's pipe close without a pid
            print(f"mlirgpu zygote: cannot fork a worker: {exc}", file=sys.stderr, flush=True)
            pid = None
        if pid == 0:
            try:
                die_with_parent(zygote_pid)
                control.close()
                os.close(go_write)
                os.read(go_read, 1)
                os.close(go_read)
                _serve_forked(fds, request[1], entry_points)
            finally:
                os._exit(1)  # never return into the zygote's loop
        if pid:
            ended.pop(pid, None)  # a reused pid: the status kept for its previous owner is stale
            data = pickle.dumps(("hello", pid), protocol=pickle.HIGHEST_PROTOCOL)
            with contextlib.suppress(OSError):
                os.write(fds[1], _HEADER.pack(len(data)) + data)
            os.write(go_write, b"!")
        for fd in fds + [go_read, go_write]:
            os.close(fd)


def _fork_tools_here():
    """Runs of MLIR's and LLVM's tools that no compile server supplies to this worker (a build without a server,
    a compile in process) fork from fork servers of the worker's own (mlirgpu.execution.forkserver), each started at its
    tool's first run and ending with the worker: a compile that assembles and links its binary runs llvm-mc and
    ld.lld, and a new process of either spends most of its CPU loading libLLVM."""
    from . import forkserver
    from ..llvm import toolchain

    for tool in forkserver.TOOLS:
        try:
            program = os.path.realpath(toolchain.llvm_tool(tool))
        except CompileError:
            continue
        if not process.supplied(program) and forkserver.is_dynamic_program(program):
            process.supply(program, _OwnForkServer(program).run)


class _OwnForkServer:
    """A worker's fork server of one tool, started at the tool's first run; after a failure (no C compiler for
    its library, a fork server that stopped answering) the worker starts that tool per run."""

    def __init__(self, program):
        self.program = program
        self.server = None
        self.failed = False

    def run(self, argv):
        """A started run of `argv` (mlirgpu.llvm.process), or None: the caller starts the tool itself."""
        from . import forkserver, rendezvous

        if self.failed:
            return None
        if self.server is None:
            try:
                preload, _reason = forkserver.library(rendezvous.folder())
                self.server = forkserver.ForkServer(self.program, preload) if preload else None
            except (OSError, rendezvous.Unavailable):
                self.server = None
            if self.server is None:
                self.failed = True
                return None
        started = self.server.run(argv, os.getcwd(), dict(os.environ))
        if started is None:
            self.failed = not self.server.ready
            return None
        return process.handed_run(argv, *started)


def _serve_forked(fds, log_path, entry_points):
    protocol_in, protocol_out = os.fdopen(fds[0], "rb"), os.fdopen(fds[1], "wb")
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    os.dup2(log, 1)
    os.close(log)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # never a client's stdin, whichever command was running when this worker was forked
    os.close(devnull)
    _serve(protocol_in, protocol_out, entry_points)


def _reap(pid, timeout, ended):
    """Exit status of child `pid` as `Popen.returncode` gives it, waiting up to `timeout` seconds (None: not at
    all); None while it runs."""
    deadline = time.monotonic() + (timeout or 0)
    while pid not in ended:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 1
        if done:
            ended[pid] = os.waitstatus_to_exitcode(status)
        elif timeout is None or time.monotonic() >= deadline:
            return None
        else:
            time.sleep(0.005)
    return ended[pid]


if __name__ == "__main__":
    # Serve from the package's own module object, which the pipeline imports (not this __main__ copy).
    from mlirgpu.execution import workers as _package_module

    if sys.argv[1] == "--zygote":
        _package_module._serve_zygote(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        _package_module._serve_spawned(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
