"""How a caller starts its worker processes, and its handles on them: a worker started on its own (`python -S -m
mlirgpu.execution.worker`), one forked from a zygote, one forked from this very process (booted, or booting in
the child).

A zygote is one booted process that only forks workers (and reaps them, reporting how they ended): a build
running several compiles at once starts one and forks every worker from it, so one Python start-up and one
import of the pipeline and the Redis client (about 0.15 s of CPU) serve all of them, at the moment the build
itself is busiest, and the workers share the zygote's pages until they write them. A build whose workers get
ready ahead (its compiles are not expected in a remote cache) has its zygote load LLVM once, before it forks
them; otherwise the zygote does not load LLVM: its workers load it when a compile needs it, so the compiles of
a clean build whose entries are cached start sooner (the compile server's zygote, booted once, has it). The
zygote is one of ours (`spawn`, or `fork_here` from a caller running one thread), or a child of a running
compile server (`from_server`), reached through the server's socket: a build then starts no Python or LLVM of
its own. Forked workers are the zygote's children, not the caller's: the zygote tells the caller their pids and
exit statuses. The handles give what the caller uses of a `Popen`.
"""
import _socket  # the C module: `socket` itself costs 11 ms of start-up for the same calls
import contextlib
import os
import pickle
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

from . import protocol, worker
from ..llvm.toolchain import LLVM_MAJOR
from ..version import PACKAGE


def new_log(folder=None):
    """A new, empty LLVM log file for a worker or zygote, in `folder` (default: the temporary folder)."""
    log = tempfile.NamedTemporaryFile(prefix="mlirgpu-llvm-", suffix=".log", delete=False, dir=folder)
    log.close()
    return log.name


def _python_argv(*args):
    return [sys.executable, "-S", "-m", "mlirgpu.execution.worker", *args, str(LLVM_MAJOR), str(os.getpid())]


def _python_env():
    """The worker skips `site` (-S: its start-up, editable-install finders included, is a fifth of a worker's)
    and gets this process's import path instead, which already holds what site would add."""
    package_root = os.path.dirname(PACKAGE)
    path = dict.fromkeys([package_root] + [os.path.abspath(p) for p in sys.path if p and os.path.exists(p)])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def spawn_worker(log_path):
    """A worker started on its own, speaking the protocol on its stdin and stdout."""
    return _spawn(_python_argv(log_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                  env=_python_env())


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


def end(process):
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


class Zygote:
    """A booted process that forks workers on request (`fork`, answered by the worker's pid in the worker's own
    pipe, so asking for a worker never waits for the zygote's start-up) and tells their exit statuses (`wait`)."""

    def __init__(self, socket, process, log_path, own_log=True):
        self.socket = socket
        self.process = process
        self.log_path = log_path
        self.own_log = own_log
        self.lock = threading.Lock()  # pairs each `wait` with its answer; `fork`s are single messages

    @classmethod
    def spawn(cls, log_folder=None, llvm=False):
        """A zygote started on its own (a caller running other threads, which a fork could deadlock); `llvm` as
        in `fork_here`."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        log_path = new_log(log_folder)
        process = _spawn(
            _python_argv("--zygote-llvm" if llvm else "--zygote", str(theirs.fileno()), log_path),
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_python_env(),
        )
        theirs.close()
        return cls(ours, process, log_path)

    @classmethod
    def fork_here(cls, log_folder=None, llvm=False):
        """A zygote forked from this process, which runs no other thread and has imported part of the pipeline (a
        build tool reading its build files: SCons's emitters scan sources): it boots from there, without a new
        interpreter's start-up and the imports made here, so the build's first compiles wait less for it. With
        `llvm` (a build whose workers load LLVM at once: Pool.prestart's `warm`) it loads LLVM before it forks
        them, once for all of them, instead of each worker on its own (40 ms of CPU each, while the build
        files are still read)."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        log_path = new_log(log_folder)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                worker.die_with_parent(parent)
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)  # never the build tool's stdin
                worker.serve_zygote(theirs, worker.boot(log_path, LLVM_MAJOR, llvm=llvm))
            finally:
                os._exit(1)  # never return into the build tool's code
        theirs.close()
        return cls(ours, _Child(pid, None, None), log_path)

    @classmethod
    def from_server(cls):
        """A zygote of the running compile server of this installation, or None (no server, another version)."""
        from . import rendezvous, server_protocol

        if not rendezvous.wanted():
            return None
        try:
            connection = rendezvous.connect(rendezvous.socket_path(rendezvous.folder()))
            if connection is None:
                return None
            server_protocol.request(connection, server_protocol.zygote_request(rendezvous.fingerprint()))
            reply = server_protocol.receive(connection)
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
            protocol.send_fork(self.socket, log_path, to_worker, from_worker)
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
                return protocol.ask_wait(self.socket, pid, timeout)
        except (OSError, EOFError, pickle.UnpicklingError):  # the zygote is gone, and what it knew with it
            try:
                os.kill(pid, 0)
                return None
            except OSError:
                return "exit status unknown: the process that forked it is gone"

    def close(self):
        self.socket.close()
        end(self.process)
        if self.own_log:
            with contextlib.suppress(OSError):
                os.unlink(self.log_path)


class _ServerZygote:
    """The `Popen` of a zygote the compile server forked: it ends when its connection closes, and its exit
    status is the server's business."""

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


def _closed_or_ready(stream):
    """Whether reading `stream` would not block: its writer closed it, or sent something. A worker between
    compiles sends nothing."""
    poller = select.poll()
    poller.register(stream.fileno(), select.POLLIN | select.POLLHUP)
    return bool(poller.poll(0))


class _ForkedProcess:
    """The `Popen` of a worker the zygote forked. Its pid is the first message on its pipe; until that is read,
    it counts as running."""

    def __init__(self, zygote, stdin, stdout):
        self.zygote = zygote
        self.stdin = stdin
        self.stdout = stdout
        self.pid = None
        self.returncode = None
        self.log_path = None  # set when the worker was never forked: the zygote's log tells why

    def read_pid(self):
        if self.pid is None and self.returncode is None:
            self.pid = protocol.receive_hello(self.stdout)
            if self.pid is not None:
                return
            self.log_path = self.zygote.log_path
            if self.zygote.process.poll() is not None:  # the zygote died (at start-up: its log says why)
                self.returncode = self.zygote.process.returncode
            else:
                self.returncode = "the zygote could not fork it"

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


def fork_here(log_path):
    """A worker forked from this process, which is booted (LLVM initialized): the compile server's runners start
    their workers so, in a few milliseconds."""
    return _forked_worker(lambda fds: worker.serve_forked(fds, log_path, worker.entry_points()))


def fork_booting(log_path, tools=()):
    """A worker forked from this process, which has imported the pipeline's front half but loaded no LLVM (a
    command's own process, MLIRGPU_SERVER=off): the child boots from there, without a new interpreter's start-up
    and the imports this process already made (about 0.15 s of a small compile's 0.4). Forked from the main
    thread only: the kernel ties a worker's death with its parent to the thread that forked it. `tools`: those
    whose fork servers the child starts as it boots (see worker.boot)."""
    return _forked_worker(lambda fds: worker.serve_forked(fds, log_path, worker.boot(log_path, LLVM_MAJOR, tools=tools),
                                                          one_command=True))


def _forked_worker(serve):
    """A child of this process that runs `serve(fds)` on its ends of the protocol's pipes and never returns into
    the caller's code; the caller's `Popen` of it."""
    to_worker, from_us = os.pipe()
    to_us, from_worker = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            worker.die_with_parent(parent)
            os.close(from_us)
            os.close(to_us)
            serve([to_worker, from_worker])
        finally:
            os._exit(1)
    os.close(to_worker)
    os.close(from_worker)
    return _Child(pid, os.fdopen(from_us, "wb"), os.fdopen(to_us, "rb"))


class _Child:
    """The `Popen` of a worker or zygote forked from this very process (`fork_here`, `fork_booting`,
    `Zygote.fork_here`)."""

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
            worker.sleep_until_exit(self.pid, 60.0 if deadline is None else deadline - time.monotonic())
        return self.returncode

    def kill(self):
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
