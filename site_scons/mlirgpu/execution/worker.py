"""What runs in a worker process: whole compiles run there, so an LLVM fatal error fails one compile instead of
its caller, and the caller (an SCons thread) only waits, leaving its interpreter free for the other jobs.

A worker is `python -S -m mlirgpu.execution.worker LOG MAJOR PARENT` (the protocol on its stdin and stdout), a
fork of a zygote (`... --zygote FD LOG MAJOR PARENT`, the zygote's loop below; `--zygote-llvm`: one that loads
LLVM before it forks), or a fork of a booted process (mlirgpu.execution.processes.fork_here). It boots (the
pipeline, the Redis client, LLVM unless a zygote without it), then
serves requests one at a time (mlirgpu.execution.protocol), each in its caller's folder, environment, umask and
resource limits: a worker outlives its callers (a compile server's clients, each with its own). LLVM's own
messages go to a private log file, whose last line the caller's crash report quotes. Workers die with their
caller (the kernel's parent-death signal).
"""
import _socket  # the C module: `socket` itself costs 11 ms of the zygote's start-up for the same calls
import contextlib
import os
import select
import signal
import sys
import tempfile
import time

from . import protocol
from ..errors import CompileError
from ..llvm import process
from ..pipeline.translation import OWN, Translated


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


def entry_points():
    """The pipeline's entry points a request may name, each with this worker's job runner: the forked stage
    runners and isolated code generation (mlirgpu.execution.fanout), which every front end's compile gets."""
    import functools

    from .fanout import FORKED
    from ..pipeline import driver as pipeline

    return {"compile_file": functools.partial(pipeline.compile_source, runner=FORKED),
            "compile_to_object": functools.partial(pipeline.compile_to_object, runner=FORKED),
            "warm": warm}


def warm(tools, translator=None, report=None):
    """Get ready for a build's compiles while the build tool still reads its build files (the CPU that reading
    leaves idle): LLVM loaded, and the fork servers of `tools` (names of forkserver.TOOLS that this worker keeps
    servers of) started, so the first compiles wait for neither (about 40 ms each, measured in bench/README)."""
    for tool in tools:
        own = _own_servers.get(tool)
        if own is not None and own.server is None and not own.failed:
            own.start()
    from ..llvm import ops as llvm_ops  # noqa: F401 - loads and initializes LLVM


def boot(log_path, expected_major, llvm=True, tools=None):
    """Import and initialize what a compile needs; LLVM's own messages go to `log_path`. Without `llvm`, LLVM is
    loaded by the first compile that needs it (importing mlirgpu.llvm.ops loads it): a compile whose entry is
    cached never does. `tools`, for a worker serving one command's compile: the tools (the translator, when the
    command does not translate ahead) that get fork servers now, which load on the other CPU while LLVM loads
    here, so their first run waits for nothing (45 ms of a command's mlir-translate)."""
    from ..util.heap import keep_booted, no_collection

    with no_collection():
        from ..cache import remote as remotecache
        from ..llvm import toolchain

        _log_to(log_path)
        toolchain.expect_llvm_major(expected_major)
        if tools is not None:
            _fork_tools_here(bind_now=False, started=tools)
        if llvm:
            from ..llvm import ops as llvm_ops  # noqa: F401 - loads and initializes LLVM
        remotecache.preload()
        points = entry_points()
        keep_booted()  # before the collector is back on, which would collect at once
        return points


def _log_to(log_path):
    """LLVM's messages on stderr, and on stdout, go to the log, never into a protocol pipe."""
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log, 2)
    os.dup2(log, 1)
    os.close(log)


def serve(protocol_in, protocol_out, entry_points, one_command=False):
    """The worker's loop. A compile reports each step it starts to the caller (`progress`), which names the step
    if LLVM ends this process; its translator asks the caller for the translation the caller made ahead."""
    def report(what, where):
        protocol.send_progress(protocol_out, what, where)

    def ask():
        return protocol.ask_caller(protocol_out, protocol_in)

    signal.signal(signal.SIGINT, _interrupted_once)
    _fork_tools_here(bind_now=not one_command)
    while True:
        request = protocol.receive_request(protocol_in)
        if request is None:
            os._exit(0)  # the caller is done: nothing is pending, and skipping interpreter teardown ends us sooner
        tempfile.tempdir = request.scratch  # this compile's temporary files, which the caller removes in any case
        if request.environment != os.environ:
            os.environ.clear()
            os.environ.update(request.environment)
            from ..llvm import toolchain

            toolchain.forget()
        if request.scan is not None:  # the caller's scan of the source: the compile does not scan it again
            from ..pipeline.scan import take_scan

            take_scan(request.scan)
        try:
            os.chdir(request.cwd)
            translator = Translated(ask) if request.translated_ahead else OWN
            with process.taken(request.umask, request.limits):  # the caller's: a worker outlives its callers
                reply = ("ok", entry_points[request.entry](*request.args, translator=translator, report=report))
        except CompileError as exc:
            reply = ("compile-error", exc)
        except Exception as exc:  # noqa: BLE001 - a bug of ours: reported as one line, traceback kept
            import traceback

            reply = ("error", (type(exc).__name__, "".join(traceback.format_exception(exc))))
        protocol.send_reply(protocol_out, *reply)


def _interrupted_once(_signum, _frame):
    """SIGINT in a worker: its compile is given up, once. Ctrl-C in a terminal reaches the worker, and its caller's
    SIGINT follows a moment later (mlirgpu.execution.pool); the second must not cut short what the first set
    going: the stage runners killed and reaped, the temp files of the dumps they were writing removed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def _serve_spawned(log_path, expected_major, parent_pid):
    """A worker started on its own: the protocol is on its stdin and stdout."""
    die_with_parent(parent_pid)
    protocol_out = os.fdopen(os.dup(1), "wb")
    protocol_in = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    serve(protocol_in, protocol_out, boot(log_path, expected_major))


def serve_forked(fds, log_path, entry_points, one_command=False):
    """A forked worker (of a zygote, or of a booted process): the protocol is on the pipe ends `fds`.
    `one_command`: it serves the compile of one command (mlirgpu.execution.processes.fork_booting)."""
    protocol_in, protocol_out = os.fdopen(fds[0], "rb"), os.fdopen(fds[1], "wb")
    _log_to(log_path)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # never a client's stdin, whichever command was running when this worker was forked
    os.close(devnull)
    serve(protocol_in, protocol_out, entry_points, one_command)


def _serve_zygote(control_fd, log_path, expected_major, parent_pid, llvm=False):
    """A zygote started on its own, by a build: boot, then fork workers on request. Without `llvm` it boots
    without LLVM: the build's first compiles wait for this boot, and a compile whose entry is cached (a clean
    build from a team's remote cache) needs no LLVM; a worker that needs it loads it itself (about 40 ms and 9 MB
    of its own), at its first compile. With `llvm` (a build whose workers get ready ahead) it loads LLVM once for
    all of them."""
    die_with_parent(parent_pid)
    control = _socket.socket(fileno=control_fd)
    serve_zygote(control, boot(log_path, expected_major, llvm=llvm))


def serve_zygote(control, entry_points):
    """The zygote's loop, in a booted process: fork a worker per `fork` request, report exit statuses on
    `wait` requests; return never (the process ends when the caller closes `control`)."""
    zygote_pid = os.getpid()
    ended = {}
    while True:
        request = protocol.receive_control(control)
        if request is None:
            os._exit(0)  # the caller is gone; the workers end on their own when their pipes close
        if request[0] == "wait":
            protocol.answer_wait(control, _reap(request[1], request[2], ended))
            continue
        if request[0] != "fork":
            continue
        _kind, log_path, fds = request
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
                serve_forked(fds, log_path, entry_points)
            finally:
                os._exit(1)  # never return into the zygote's loop
        if pid:
            ended.pop(pid, None)  # a reused pid: the status kept for its previous owner is stale
            with contextlib.suppress(OSError):
                protocol.write_hello(fds[1], pid)
            os.write(go_write, b"!")
        for fd in fds + [go_read, go_write]:
            os.close(fd)


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
            sleep_until_exit(pid, deadline - time.monotonic())
    return ended[pid]


def sleep_until_exit(pid, seconds):
    """Sleep until child `pid` ends or `seconds` pass: on its pidfd (Linux 5.3), woken as it ends, else 5 ms at
    a time. A build's end waits for each worker's and the zygote's, which polling made up to 5 ms later each."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfds here, or the child is already reaped
        time.sleep(min(seconds, 0.005))
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll(max(0, min(seconds, 60.0)) * 1000)
    finally:
        os.close(fd)


def _fork_tools_here(bind_now=True, started=()):
    """Runs of MLIR's and LLVM's tools that no compile server supplies to this worker (a build without a server,
    a compile in process) fork from fork servers of the worker's own (mlirgpu.execution.forkserver), each started at its
    tool's first run and ending with the worker: a compile that assembles and links its binary runs llvm-mc and
    ld.lld, one that gives a large module's code generation to the release llc runs that, and a new process of
    any of them spends most of its CPU loading libLLVM (an empty llc run: 8.5 ms of CPU started, 3.1 forked).
    `bind_now`: see ForkServer; the tools `started` get theirs now."""
    from . import forkserver

    for tool, program in forkserver.loadable().items():
        if not process.supplied(program):
            own = _own_servers[tool] = _OwnForkServer(program, bind_now)
            if tool in started:
                own.start()
            process.supply(program, own.run)


_own_servers = {}  # tool -> this worker's _OwnForkServer of it (those no compile server supplies)


class _OwnForkServer:
    """A worker's fork server of one tool, started at the tool's first run (or as the worker boots); after a
    failure (no C compiler for its library, a fork server that stopped answering) the worker starts that tool per
    run."""

    def __init__(self, program, bind_now):
        self.program = program
        self.bind_now = bind_now  # a worker of one command runs a tool once or twice: it binds lazily
        self.server = None
        self.failed = False

    def start(self):
        """Start the fork server (it loads the tool while this process goes on), or mark it failed."""
        from . import forkserver, rendezvous

        try:
            preload, _reason = forkserver.library(rendezvous.folder())
            self.server = forkserver.ForkServer(self.program, preload, self.bind_now) if preload else None
        except (OSError, rendezvous.Unavailable):
            self.server = None
        self.failed = self.server is None

    def run(self, argv):
        """A started run of `argv` (mlirgpu.llvm.process), or None: the caller starts the tool itself."""
        if self.server is None and not self.failed:
            self.start()
        if self.failed:
            return None
        started = self.server.run(argv, os.getcwd(), dict(os.environ))
        if started is None:
            self.failed = not self.server.ready
            return None
        return process.handed_run(argv, *started)


if __name__ == "__main__":
    # Serve from the package's own module object, which the pipeline imports (not this __main__ copy).
    from mlirgpu.execution import worker as _package_module

    if sys.argv[1] in ("--zygote", "--zygote-llvm"):
        _package_module._serve_zygote(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                                      llvm=sys.argv[1] == "--zygote-llvm")
    else:
        _package_module._serve_spawned(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
