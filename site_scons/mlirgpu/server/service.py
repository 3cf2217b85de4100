"""The compile server: one process per user and installation that keeps Python, the package and LLVM warm, so a
`mlirgpu compile` pays neither start-up (the client is mlirgpu.server.client; `python -m mlirgpu.server.service FOLDER`
runs a server, which clients start on first use).

A request is one message on the server's Unix socket (SOCK_SEQPACKET, in a folder only its user may enter; the
peer's uid is checked again with SO_PEERCRED, and a request is at most 1 MiB of JSON):

    run       argv, folder, environment, umask and resource limits of a `mlirgpu compile|list-outputs`, with
              the client's stdin, stdout and stderr (SCM_RIGHTS); a server whose hard limits are below the
              client's soft ones (it was started under a lower `ulimit`) answers `replaced` and exits. An
              idle runner (mlirgpu.server.runner: a warm process forked from the server, with its LLVM worker, that
              runs commands one after another) runs `mlirgpu.frontends.cli` in the client's folder, environment, umask
              and limits, writing to the client's own streams; the server keeps one runner idle for the next
              command. The server answers `started`, the runner `exit` with the command's exit code (so a
              compile outlives a server killed meanwhile); the server kills the runner if the client goes
              away first (the runner kills itself if no server is left to), and answers for it if it died.
    zygote    a build tool's (SCons's) request for workers: a child of the server serves the connection as
              mlirgpu.execution.workers' zygote, forking warm workers for the build until it closes the connection.
    tool      a command's request for a run of MLIR's or LLVM's tools (mlir-translate, mlir-opt, llvm-mc,
              ld.lld): argv, folder and environment. The server keeps each tool loaded in a fork server
              (mlirgpu.execution.forkserver; mlir-translate from the start, the others from their first request) and
              hands over a fresh run's pipes (SCM_RIGHTS), so a run costs no loading of libMLIR or libLLVM;
              only a command that runs a tool asks, so one served from the stage cache starts none. Without a
              C compiler for the fork server, two mlir-translates of the usual command line wait prestarted.
    status    the server's pid, fingerprint, start time, what it served and which WARM_IMPORTS it holds.
    stop      the server exits (after answering).

A `run` or `zygote` request carries the client's fingerprint (mlirgpu.execution.rendezvous): a server of another one
answers `replaced` and exits, so an upgraded or edited installation is never served by old code. The server
exits when idle for `$MLIRGPU_SERVER_IDLE` seconds, or when its socket is removed or taken by another server.
Its own messages (and LLVM's) go to `server.log` in its folder.
"""
import socket as _socket
import contextlib
import errno
import gc
import fcntl
import importlib
import json
import os
import resource
import select
import signal
import struct
import sys
import time

from ..execution import forkserver, rendezvous, served_tools
from ..llvm import process
from . import runner
from ..llvm.process import passed_fds

MAX_IDLE_RUNNERS = max(2, os.cpu_count() or 2)  # a runner beyond these ends once its command ended
# The client library a command imports when its environment sets the variable (a remote stage cache, a Dask
# scheduler): 0.1-0.2 s of imports per command, paid once by the server instead, after the first such command.
WARM_IMPORTS = (("MLIRGPU_REMOTE_CACHE", "redis"), ("MLIRGPU_EXECUTOR", "distributed"))


def _reply(connection, value):
    with contextlib.suppress(OSError):
        connection.send(json.dumps(value).encode("utf-8"))


def peer_uid(connection):
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    return rendezvous.peer(connection)[1]


def view(pid="self"):
    """What process `pid` sees of the files (its mount namespace and root, through /proc), or None if that
    cannot be told: a request runs here only for a client that sees what the server sees."""
    try:
        return tuple((info.st_dev, info.st_ino) for info in (os.stat(f"/proc/{pid}/ns/mnt"),
                                                              os.stat(f"/proc/{pid}/root")))
    except OSError:
        return None


def parse(data):
    """The request in `data` (JSON of an object), or ValueError. Its size is bounded by the socket's message
    (rendezvous.MAX_REQUEST), its nesting by json's parser, which stops at the interpreter's recursion limit
    (RecursionError, never a crash): a request nested deeper than any real one is answered with an error."""
    try:
        request = json.loads(data)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(request, dict):
        raise ValueError("not an object")
    return request


class Server:
    def __init__(self, directory):
        self.directory = directory
        self.path = rendezvous.socket_path(directory)
        self.log_path = os.path.join(directory, "server.log")
        self.fingerprint = rendezvous.fingerprint()
        self.started = time.time()
        self.served = {"run": 0, "zygote": 0, "refused": 0, "tool": 0, "runners": 0}
        self.children = set()  # zygotes, and runners told to end, reaped when they have
        self.runners = []  # _Runner
        self.preload = None  # the fork servers' library (mlirgpu.execution.forkserver), None where it cannot be built
        self.forkservers = {}  # program (real path) -> its fork server, started at its first request
        self.failures = {}  # program -> fork servers of it that stopped answering (after three, none is started)
        self.pool = []  # without fork servers: prestarted mlir-translates (process._Prestarted)
        self.spares = []  # prestarted tools handed to commands, reaped once they end
        self.listener = None
        self.inode = None
        self.view = view()  # the files this server sees: a request is served only for a client that sees them

    # Start-up: one server per socket, whoever starts it (concurrent first use).

    def listen(self):
        """Bind the socket unless a live server holds it (then return False). Under the folder's lock, so of
        clients starting servers at once, one server binds and the others exit."""
        lock_fd = rendezvous.own_file(os.path.join(self.directory, "server.lock"), os.O_RDWR | os.O_CREAT)
        with open(lock_fd, "rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _answers(self.path):
                return False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
            rendezvous.reach(listener.bind, self.path)
            os.chmod(self.path, 0o600)
            listener.listen(64)
            self.inode = os.stat(self.path).st_ino
            self.fingerprint = rendezvous.write_card(self.directory)  # for the native launcher (launcher.c)
        self.listener = listener
        return True

    def boot(self):
        """Import and initialize everything a compile needs, once: requests fork from this state."""
        from ..execution import worker
        from ..llvm.toolchain import LLVM_MAJOR

        self.entry_points = worker.boot(self.log_path, LLVM_MAJOR)
        from ..frontends import api, cli
        from ..execution import batch, dask as distributed
        from ..pipeline import planning, scan  # noqa: F401 - requests fork with them

        cli._parser()
        self._start_forkservers()
        self._prestart()
        # The programs commands may ask to run (mlirgpu.execution.served_tools).
        self.offered = sorted(self.loadable) if self.preload else sorted({ready.argv[0] for ready in self.pool})
        gc.freeze()  # the collections of forked commands then leave these objects' pages shared with the server

    def _start_forkservers(self):
        """Find the tools a fork server can keep loaded (dynamically linked programs: not a wrapper script),
        build the fork servers' library and start mlir-translate's, which nearly every compile runs. Where the
        library cannot be built (no C compiler), prestarted mlir-translates serve instead."""
        from ..llvm import toolchain
        from ..errors import CompileError

        self.loadable = set()
        for tool in forkserver.TOOLS:
            try:
                program = os.path.realpath(toolchain.llvm_tool(tool))
            except CompileError:
                continue
            if forkserver.is_dynamic_program(program):
                self.loadable.add(program)
        if not self.loadable:
            return
        self.preload, reason = forkserver.library(self.directory)
        if self.preload is None:
            print(f"mlirgpu server: tools start per run: {reason}", file=sys.stderr, flush=True)
            return
        with contextlib.suppress(CompileError):
            self._forkserver(os.path.realpath(toolchain.llvm_tool("mlir-translate")))

    def _forkserver(self, program):
        """The fork server of `program`, started now if it was not (None until it is, or if it cannot be)."""
        if program in self.forkservers:
            return self.forkservers[program]
        if program in self.loadable and self.failures.get(program, 0) < 3:
            try:
                self.forkservers[program] = forkserver.ForkServer(program, self.preload)
            except OSError as exc:
                print(f"mlirgpu server: cannot start a fork server of {program}: {exc}", file=sys.stderr, flush=True)
                self.loadable.discard(program)
        return None

    def _drop_forkserver(self, program):
        """A fork server that stopped answering: closed, reaped once it ends; the next request starts another."""
        dropped = self.forkservers.pop(program)
        dropped.close()
        self.children.add(dropped.pid)
        self.failures[program] = self.failures.get(program, 0) + 1
        print(f"mlirgpu server: the fork server of {program} stopped answering", file=sys.stderr, flush=True)

    def _prestart(self):
        """mlir-translates of this server's environment, loaded and waiting for the next commands' input (two:
        a build runs commands two at a time or more), where fork servers cannot serve."""
        from ..llvm import mlirtools
        from ..errors import CompileError

        while self.preload is None and len(self.pool) < 2:
            try:
                self.pool.append(process.prestart(mlirtools.translate_argv()))
            except (CompileError, OSError):
                return

    # The loop.

    def run(self):
        idle = rendezvous.idle_seconds()
        last = time.monotonic()
        while True:
            self._reap()
            busy = any(item.run for item in self.runners)
            if time.monotonic() - last > idle and not self.children and not busy:
                break
            if not self._still_ours():
                break
            if busy:
                last = time.monotonic()
            if not any(item.run is None for item in self.runners):
                self._new_runner()  # forked now, between requests: the next command finds it ready
            poller = select.poll()  # not select(): a build with hundreds of jobs passes descriptor 1024
            poller.register(self.listener, select.POLLIN)
            said, left = {}, {}
            for item in self.runners:
                said[item.channel.fileno()] = item
                if item.run:
                    left[item.run.connection.fileno()] = item
            for fd in [*said, *left]:
                poller.register(fd, select.POLLIN)
            ready = {fd for fd, _event in poller.poll(1000)}
            # A runner's word first: a client that leaves because its runner answered it is no client gone.
            for item in [said[fd] for fd in ready if fd in said]:
                if item in self.runners:
                    self._runner_said(item)
            for item in [left[fd] for fd in ready if fd in left]:
                if item in self.runners and item.run is not None:
                    self._client_left(item)
            if self.listener.fileno() not in ready:
                continue
            try:
                connection, _address = self.listener.accept()
            except OSError:
                continue
            handled = self._handle(connection)
            if handled != "running":
                connection.close()
            if handled == "stop":
                break
            if handled in ("served", "running"):  # asking for the status is no work: it keeps no server alive
                last = time.monotonic()
        self._close()

    def _still_ours(self):
        try:
            return os.stat(self.path).st_ino == self.inode
        except OSError:
            return False

    def _close(self):
        for ready in self.pool:
            ready.close()
        for server in self.forkservers.values():
            server.close()  # it ends when its runs in flight have
        for item in list(self.runners):  # a runner's command in flight goes on, and answers its client
            if item.run is not None:
                item.run.forget()  # this server's copies of the client's connection and stderr: the runner's now
            self._end_runner(item, kill=False)
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self.listener.close()

    def _reap(self):
        self.spares = [spare for spare in self.spares if spare.poll() is None]
        self.pool = [ready for ready in self.pool if ready.poll() is None or ready.close()]
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                done, _status = os.waitpid(pid, os.WNOHANG)
                if not done:
                    continue
            self.children.discard(pid)

    def _handle(self, connection):
        pid, uid = rendezvous.peer(connection)
        if uid != os.getuid():
            self.served["refused"] += 1
            print(f"mlirgpu server: refused a connection of uid {uid}", file=sys.stderr, flush=True)
            return None
        connection.settimeout(10)
        try:
            # Received descriptors close on exec: no tool this server starts may hold a client's streams open.
            data, ancillary, flags, _address = connection.recvmsg(rendezvous.MAX_REQUEST, _socket.CMSG_SPACE(3 * 4),
                                                                  _socket.MSG_CMSG_CLOEXEC)
        except OSError:
            return None
        fds = passed_fds(ancillary)
        try:
            if flags & (_socket.MSG_TRUNC | _socket.MSG_CTRUNC):
                _reply(connection, {"kind": "error", "message": "request too large"})
                return None
            try:
                request = parse(data)
                kind = request["kind"]
            except (ValueError, KeyError, TypeError):
                _reply(connection, {"kind": "error", "message": "not a request"})
                return None
            if kind == "status":
                _reply(connection, {"kind": "status", "pid": os.getpid(), "fingerprint": self.fingerprint,
                                    "started": self.started, "served": self.served, "log": self.log_path,
                                    "warm": [module for _variable, module in WARM_IMPORTS if module in sys.modules],
                                    "tools": sorted(os.path.basename(program) for program in self.forkservers)})
                return None
            if kind == "stop":
                _reply(connection, {"kind": "stopped", "pid": os.getpid()})
                return "stop"
            if kind in ("run", "zygote", "tool") and (self.view is None or view(pid) != self.view):
                # Another mount namespace or root: the files the client names are not the ones here.
                self.served["refused"] += 1
                _reply(connection, {"kind": "none" if kind == "tool" else "elsewhere", "message":
                                    "this process sees other files than the compile server (another mount "
                                    "namespace or root)" if self.view else "the compile server cannot tell "
                                    "which files a client sees (no /proc)"})
                return None
            if kind == "tool":
                self._hand_over(connection, request)
                return None
            if kind not in ("run", "zygote"):
                _reply(connection, {"kind": "error", "message": f"unknown request {kind!r}"})
                return None
            if request.get("fingerprint") != self.fingerprint:
                return self._replaced(connection)  # the client starts a server of its own version
            if kind == "run" and len(fds) != 3:
                _reply(connection, {"kind": "error", "message": "a run request carries stdin, stdout, stderr"})
                return None
            if kind == "run" and not _well_formed(request):
                _reply(connection, {"kind": "error", "message": "not a request"})
                return None
            if kind == "run" and not process.well_formed_limits(request.get("limits")):
                _reply(connection, {"kind": "error", "message": "a run request carries the client's limits"})
                return None  # a native launcher built before limits were sent: it becomes the Python client
            if kind == "run" and process.exceeding(request["limits"]):
                # Limits above this server's hard ones (it was started under a lower `ulimit`): it ends, and the
                # client starts a server of its own limits (mlirgpu.server.client, as for another version).
                print(f"mlirgpu server: a client's limits exceed this server's hard limits "
                      f"({', '.join(process.exceeding(request['limits']))}); ending", file=sys.stderr, flush=True)
                return self._replaced(connection)
            self.served[kind] += 1
            if kind == "run":
                return self._start_run(connection, data, fds, request)
            pid = os.fork()
            if pid == 0:
                try:
                    self._forget_in_child(keep=connection)
                    _zygote(connection, self.entry_points, self.log_path, (self.path, self.offered))
                finally:
                    os._exit(1)
            self.children.add(pid)
            return "served"
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _replaced(self, connection):
        """Answer `replaced` and end, the socket taken away first: the client's next connection starts a server
        (rendezvous.start_server) instead of reaching this one's listener as it closes, which would reset it."""
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        _reply(connection, {"kind": "replaced"})
        return "stop"

    # Runners.

    def _start_run(self, connection, data, fds, request):
        """Hand the command to an idle runner (forking one if none is); "running", or None if none took it."""
        for _attempt in range(2):
            item = next((item for item in self.runners if item.run is None), None) or \
                self._new_runner(also_close=[connection, *fds])
            if item is None:
                break
            _reply(connection, {"kind": "started", "pid": item.pid})
            try:
                item.channel.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                               struct.pack("4i", *fds, connection.fileno()))])
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:  # larger than a socket pair carries: the client compiles itself
                    break
                self._end_runner(item, kill=True)  # it has just ended
                continue
            item.run = _Run(connection, os.dup(fds[2]))
            self._warm(request.get("env") or {})
            return "running"
        _reply(connection, {"kind": "error", "message": "no runner could be started"})
        return None

    def _new_runner(self, also_close=()):
        """Fork a runner (None if it cannot be); `also_close`: the descriptors of the request being handled."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:
            try:
                ours.close()
                self._forget_in_child(keep=theirs)
                for fd in also_close:
                    with contextlib.suppress(OSError):
                        fd.close() if isinstance(fd, _socket.socket) else os.close(fd)
                runner.serve(theirs, (self.path, self.offered))
            finally:
                os._exit(1)
        theirs.close()
        self.served["runners"] += 1
        item = _Runner(pid, ours)
        self.runners.append(item)
        return item

    def _runner_said(self, item):
        """A runner's word: its command ended and it answered the client (and whether it ends now), or it
        ended without a word (the server answers the client for it)."""
        try:
            data = item.channel.recv(1 << 12)
            retire = bool(json.loads(data)["retire"]) if data else None
        except (OSError, ValueError, KeyError, TypeError):
            retire = None
        run, item.run = item.run, None
        if retire is None:
            status = self._end_runner(item, kill=True)
            if run is not None:
                run.finish(_died(run.stderr, status))
            return
        if run is not None:
            run.finish(None)
        if retire or sum(1 for other in self.runners if other.run is None) > MAX_IDLE_RUNNERS:
            self._end_runner(item, kill=False)

    def _client_left(self, item):
        """The client of a running command sent something or went away: it no longer waits, so the command
        (its runner, and the runner's LLVM worker with it) is killed."""
        run, item.run = item.run, None
        self._end_runner(item, kill=True)
        run.finish(None)

    def _end_runner(self, item, kill):
        """Kill a runner and wait for it (its exit status), or close its channel and let it end (a runner that
        is done or idle ends on that); the server reaps it then."""
        self.runners.remove(item)
        item.channel.close()
        if not kill:
            self.children.add(item.pid)
            return None
        with contextlib.suppress(OSError):
            os.kill(item.pid, signal.SIGKILL)
        try:
            return os.waitpid(item.pid, 0)[1]
        except ChildProcessError:
            return None

    def _forget_in_child(self, keep):
        """In a process forked from the server: close the server's descriptors (its socket, the runners'
        channels, the clients' connections and streams of running commands, the prestarted tools), so that no
        client waits for a copy held here and no tool is kept from its end of input."""
        self.listener.close()
        for ready in self.pool:
            ready.close()
        for server in self.forkservers.values():
            server.close()
        for item in self.runners:
            if item.channel is not keep:
                item.channel.close()
            if item.run is not None:
                item.run.forget()

    def _warm(self, environment):
        """Import the client libraries `environment` asks for (WARM_IMPORTS), so that the next commands fork
        with them; one that fails to import is the command's to report."""
        for variable, module in WARM_IMPORTS:
            if str(environment.get(variable, "")).strip() and module not in sys.modules:
                try:
                    importlib.import_module(module)
                except Exception:  # noqa: BLE001 - not installed or broken: each command says so itself
                    continue
                gc.freeze()

    def _hand_over(self, connection, request):
        """Give the requesting command a run of the tool it names (its pipes and pid), forked by the tool's
        fork server or, without those, a prestarted mlir-translate of the same command line; `none` when
        there is none (the command starts the tool itself)."""
        argv, folder, environment = request.get("argv"), request.get("cwd"), request.get("env")
        if not (isinstance(argv, list) and argv and all(isinstance(word, str) for word in argv)
                and isinstance(folder, str) and isinstance(environment, dict)
                and all(isinstance(value, str) for value in environment.values())):
            _reply(connection, {"kind": "none"})
            return
        program = os.path.realpath(argv[0])
        if self.preload is not None:
            server = self._forkserver(program)
            run = server.run(argv, folder, environment) if server else None
            if server and run is None and not server.ready:
                self._drop_forkserver(program)
        else:
            ready = next((item for item in self.pool
                          if process.same_tool(item.argv) == process.same_tool(argv) and item.poll() is None), None)
            run = (ready.pid, ready.handed()) if ready else None
            if ready:
                self.pool.remove(ready)
                self.spares.append(ready)
        if run is None:
            _reply(connection, {"kind": "none"})
            return
        pid, fds = run
        try:
            connection.sendmsg([json.dumps({"kind": "tool", "pid": pid}).encode()],
                               [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("4i", *fds))])
        except OSError:
            pass  # the command went away: the run ends on EOF
        finally:
            for fd in fds:
                os.close(fd)
        self.served["tool"] += 1
        self._prestart()


class _Runner:
    """A runner process (mlirgpu.server.runner) and the command it runs (a _Run), if any."""

    def __init__(self, pid, channel):
        self.pid = pid
        self.channel = channel
        self.run = None


class _Run:
    """A running command's client: its connection, and a copy of its stderr (for the message if the runner
    dies; the command's own copies are the runner's)."""

    def __init__(self, connection, stderr):
        self.connection = connection
        self.stderr = stderr

    def finish(self, code):
        """Answer the client with the exit code (None: it was answered, or went away) and let it go."""
        with contextlib.suppress(OSError):
            os.close(self.stderr)
        if code is not None:
            _reply(self.connection, {"kind": "exit", "code": code})
        self.connection.close()

    def forget(self):
        """In a forked child: close this process's copies without a word to the client."""
        with contextlib.suppress(OSError):
            os.close(self.stderr)
        self.connection.close()


def _well_formed(request):
    """Whether a run request has what a runner reads, of the types it reads."""
    argv, folder, environment, umask = (request.get(key) for key in ("argv", "cwd", "env", "umask"))
    return (isinstance(argv, list) and all(isinstance(word, str) for word in argv) and isinstance(folder, str)
            and isinstance(environment, dict) and all(isinstance(value, str) for value in environment.values())
            and type(umask) is int and 0 <= umask <= 0o777)


def _died(stderr, status):
    """The exit code of a command whose runner ended without answering; a runner killed by a signal is a bug of
    ours, said on the client's stderr as the command would have said it."""
    code = os.waitstatus_to_exitcode(status) if status is not None else 1
    if code < 0:
        with contextlib.suppress(OSError):
            os.write(stderr, f"mlirgpu: error: internal error: the compile ended by signal {-code} "
                             "(fix: please report it; MLIRGPU_SERVER=off compiles without the server)\n".encode())
    return 1


def _answers(path):
    """Whether a server answers on `path` now."""
    try:
        probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        probe.settimeout(5)
        rendezvous.reach(probe.connect, path)
        if rendezvous.peer(probe)[1] != os.getuid():
            return False  # another user's socket, planted there: replaced
        probe.send(b'{"kind": "status"}')
        return bool(probe.recv(1 << 16))
    except OSError:
        return False


def _zygote(connection, entry_points, log_path, offer):
    """Serve `connection` as a zygote of mlirgpu.execution.workers for a build tool, until it closes it. The workers it
    forks take runs of the server's loaded tools (`offer`: the server's socket and those programs)."""
    from ..execution.worker import serve_zygote

    served_tools.supply_from_server(offer)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _reply(connection, {"kind": "zygote", "pid": os.getpid(), "log": log_path})
    connection.settimeout(None)
    serve_zygote(connection, entry_points)


def fresh_limits():
    """Take the soft limits of a fresh login instead of those of the client that started this server (a `ulimit
    -S -f` there would make every later command's larger writes fail): each command runs with its own client's
    (mlirgpu.llvm.process.taken); a hard limit a client lowered cannot be raised, and a client wanting more starts a
    server of its own (Server._handle)."""
    for name in ("FSIZE", "CPU", "AS", "DATA", "NOFILE"):
        kind = getattr(resource, f"RLIMIT_{name}")
        soft, hard = resource.getrlimit(kind)
        wanted = hard
        if name == "NOFILE":  # enough for a build's hundreds of jobs; not the millions some hard limits allow,
            enough = 1 << 16 if hard == resource.RLIM_INFINITY else min(hard, 1 << 16)  # which tools that close
            wanted = soft if soft == resource.RLIM_INFINITY or soft >= enough else enough  # every fd count through
        resource.setrlimit(kind, (wanted, hard))


def _detach(log):
    """/dev/null as stdin, and the log as stdout and stderr: no stream of whoever started the server (a build
    tool's pipe: `python -m mlirgpu.server.service FOLDER 2>&1 | cat`) stays open in it, nor in what it starts."""
    opened = {0: os.open(os.devnull, os.O_RDONLY), 1: os.open(log, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)}
    for fd, source in opened.items():
        os.dup2(source, fd)
        os.close(source)
    os.dup2(1, 2)


def main(directory):
    with contextlib.suppress(OSError):
        os.setsid()  # no terminal's signals: the server outlives the command that started it
    fresh_limits()
    # The folder checked again, and the log made or checked as this user's own plain file, before the server
    # writes anything there (LLVM's messages, the workers, mlirgpu.execution.workers, append to it by name).
    rendezvous.check_folder(directory)
    os.close(rendezvous.own_file(os.path.join(directory, "server.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    _detach(os.path.join(directory, "server.log"))
    server = Server(directory)
    if not server.listen():
        return 0
    server.boot()
    server.run()
    return 0


if __name__ == "__main__":
    from mlirgpu.server import service as _package_module  # the package's module object, which the workers import

    sys.exit(_package_module.main(sys.argv[1]))
