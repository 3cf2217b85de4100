"""The compile server: one process per user and installation that keeps Python, the package and LLVM warm, so a
`mlirgpu compile` pays neither start-up (the client is mlirgpu.server.client; `python -m mlirgpu.server.service FOLDER`
runs a server, which clients start on first use). This module starts it and serves its socket.

A request is one message on the server's Unix socket (SOCK_SEQPACKET, in a folder only its user may enter; the
peer's uid is checked again with SO_PEERCRED; every message is mlirgpu.execution.server_protocol's; a request
is checked as mlirgpu.server.requests says):

    run       argv, folder, environment, umask and resource limits of a `mlirgpu compile|list-outputs` (no
              descriptor: the client passes its stdin, stdout and stderr to the runner alone, on the socket the
              `started` answer carries); a server whose hard limits are below the client's soft ones (it was
              started under a lower `ulimit`) answers `replaced` and exits. An
              idle runner (mlirgpu.server.runner_pool: warm processes forked from the server, each with its LLVM
              worker, that run commands one after another) runs `mlirgpu.frontends.cli` in the client's folder,
              environment, umask and limits, writing to the client's own streams. The server answers `started`,
              the runner `exit` with the command's exit code (so a compile outlives a server killed meanwhile);
              the server kills the runner if the client goes away first (the runner kills itself if no server
              is left to), and answers for it if it died.
    zygote    a build tool's (SCons's) request for workers: a child of the server serves the connection as
              mlirgpu.execution.processes' zygote, forking warm workers for the build until it closes the connection.
    tool      a command's request for a run of MLIR's or LLVM's tools (mlir-translate, mlir-opt, llvm-mc,
              ld.lld): argv, folder and environment. The server keeps them loaded (mlirgpu.server.tools) and
              hands over a fresh run's pipes, so a run costs no loading of libMLIR or libLLVM.
    status    the server's pid, fingerprint, start time, what it served and which WARM_IMPORTS it holds.
    stop      the server exits (after answering).

A `run` or `zygote` request carries the client's fingerprint (mlirgpu.execution.rendezvous): a server of another one
answers `replaced` and exits, so an upgraded or edited installation is never served by old code; any other
request it cannot serve (no fingerprint, a field missing or of another type) is answered with an error, and the
server serves on. A request larger than a socket's message comes in a memfd (server_protocol.send). The server
exits when idle for `$MLIRGPU_SERVER_IDLE` seconds, or when its socket is removed or taken by another server.
Its own messages (and LLVM's) go to `server.log` in its folder.
"""
import socket as _socket
import contextlib
import gc
import fcntl
import importlib
import os
import resource
import select
import signal
import sys
import time

from ..execution import rendezvous, served_tools, server_protocol as protocol
from ..execution.server_protocol import reply
from ..llvm import process
from . import launcher, requests
from .runner_pool import Runners
from .tools import Tools
from ..util import environment

# The client library a command imports when its environment sets the variable (a remote stage cache, a Dask
# scheduler): 0.1-0.2 s of imports per command, paid once by the server instead, after the first such command.
WARM_IMPORTS = (("MLIRGPU_REMOTE_CACHE", "redis"), ("MLIRGPU_EXECUTOR", "distributed"))


class Server:
    def __init__(self, directory):
        self.directory = directory
        self.path = rendezvous.socket_path(directory)
        self.log_path = os.path.join(directory, "server.log")
        self.fingerprint = rendezvous.fingerprint()
        self.started = time.time()
        self.served = {"run": 0, "zygote": 0, "refused": 0, "tool": 0}
        self.children = set()  # zygotes, runners told to end and dropped fork servers, reaped when they have
        self.tools = Tools(directory, self.children)
        self.runners = None  # Runners, once booted
        self.listener = None
        self.inode = None

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
            self.fingerprint = launcher.write_card(self.directory)  # for the native launcher (launcher.c)
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
        # The programs commands may ask to run (mlirgpu.execution.served_tools).
        self.offer = (self.path, self.tools.start())
        self.runners = Runners(self.offer, self.children, self._forget_in_child)
        gc.freeze()  # the collections of forked commands then leave these objects' pages shared with the server

    def build_launcher(self):
        """Build this installation's native launcher into the user's cache where it is missing (a pip install
        without tools/bootstrap: `mlirgpu --launcher` and the build recipes then find it), in a child of its own,
        so no command waits for the C compiler (mlirgpu.server.launcher)."""
        if os.access(launcher.cached(), os.X_OK):
            return
        pid = os.fork()
        if pid == 0:
            try:
                self._forget_in_child(None)
                launcher.ensure()
            finally:
                os._exit(0)
        self.children.add(pid)

    # The loop.

    def run(self):
        idle = rendezvous.idle_seconds()
        last = time.monotonic()
        while True:
            self._reap()
            busy = self.runners.busy()
            if time.monotonic() - last > idle and not self.children and not busy:
                break
            if not self._still_ours():
                break
            if busy:
                last = time.monotonic()
            self.runners.keep_one_idle()  # forked now, between requests: the next command finds it ready
            poller = select.poll()  # not select(): a build with hundreds of jobs passes descriptor 1024
            poller.register(self.listener, select.POLLIN)
            for fd in self.runners.watched():
                poller.register(fd, select.POLLIN)
            ready = {fd for fd, _event in poller.poll(1000)}
            self.runners.attend(ready)
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
        self.tools.close()
        self.runners.close()
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self.listener.close()

    def _reap(self):
        self.tools.reap()
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                done, _status = os.waitpid(pid, os.WNOHANG)
                if not done:
                    continue
            self.children.discard(pid)

    def _handle(self, connection):
        """Serve one request: None (answered), "served" (work was done), "running" (a runner has the connection
        now) or "stop"."""
        pid, uid = rendezvous.peer(connection)
        if uid != os.getuid():
            self.served["refused"] += 1
            print(f"mlirgpu server: refused a connection of uid {uid}", file=sys.stderr, flush=True)
            return None
        received = protocol.receive_request(connection)
        if received is None:
            return None
        data, fds, problem = received
        try:
            if problem:
                reply(connection, protocol.error(problem))
                return None
            return self._answer(connection, pid, data, fds)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _answer(self, connection, pid, data, fds):
        try:
            request = protocol.parse_request(data)
            kind = request["kind"]
        except (ValueError, KeyError, TypeError):
            kind = None
        if not isinstance(kind, str):
            reply(connection, protocol.error("not a request"))
            return None
        if kind == "status":
            reply(connection, protocol.status_answer(
                os.getpid(), self.fingerprint, self.started, {**self.served, "runners": self.runners.forked},
                self.log_path, [module for _variable, module in WARM_IMPORTS if module in sys.modules],
                self.tools.loaded()))
            return None
        if kind == "stop":
            reply(connection, protocol.stopped(os.getpid()))
            return "stop"
        seen = requests.sees_these_files(pid) if kind in ("run", "zygote", "tool") else True
        if not seen:
            # Another root, or other mounts: the files the client names are not the ones here.
            self.served["refused"] += 1
            reply(connection, protocol.elsewhere(kind, seen is not None))
            return None
        if kind == "tool":
            if self.tools.hand_over(connection, request):
                self.served["tool"] += 1
            return None
        if kind not in ("run", "zygote"):
            reply(connection, protocol.error(f"unknown request {kind!r}"))
            return None
        fingerprint = request.get("fingerprint")
        if isinstance(fingerprint, str) and fingerprint != self.fingerprint:
            return self._replaced(connection)  # the client starts a server of its own version
        problem = "not a request" if not isinstance(fingerprint, str) else \
            requests.run_problem(request, fds) if kind == "run" else None
        if not problem and kind == "run" and not process.well_formed_limits(request.get("limits")):
            # A native launcher built before limits were sent: told so, it becomes the Python client.
            problem = "a run request carries the client's limits"
        if problem:
            reply(connection, protocol.error(problem))
            return None
        if kind == "run" and process.exceeding(request["limits"]):
            # Limits above this server's hard ones (it was started under a lower `ulimit`): it ends, and the
            # client starts a server of its own limits (mlirgpu.server.client, as for another version).
            print(f"mlirgpu server: a client's limits exceed this server's hard limits "
                  f"({', '.join(process.exceeding(request['limits']))}); ending", file=sys.stderr, flush=True)
            return self._replaced(connection)
        self.served[kind] += 1
        if kind == "run":
            if not self.runners.start(connection, data):
                return None
            self._warm(request.get("env") or {})
            return "running"
        pid = os.fork()
        if pid == 0:
            try:
                self._forget_in_child(keep=connection)
                _zygote(connection, self.entry_points, self.log_path, self.offer)
            finally:
                os._exit(1)
        self.children.add(pid)
        return "served"

    def _replaced(self, connection):
        """Answer `replaced` and end, the socket taken away first: the client's next connection starts a server
        (rendezvous.start_server) instead of reaching this one's listener as it closes, which would reset it."""
        if self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        reply(connection, protocol.replaced())
        return "stop"

    def _forget_in_child(self, keep):
        """In a process forked from the server: close the server's descriptors (its socket, the runners'
        channels, the clients' connections and streams of running commands, the prestarted tools), so that no
        client waits for a copy held here and no tool is kept from its end of input."""
        self.listener.close()
        self.tools.close()
        self.runners.forget(keep)

    def _warm(self, client_environment):
        """Import the client libraries `client_environment` asks for (WARM_IMPORTS), so that the next commands
        fork with them; one that fails to import is the command's to report."""
        for variable, module in WARM_IMPORTS:
            if environment.value(variable, client_environment) and module not in sys.modules:
                try:
                    importlib.import_module(module)
                except Exception:  # noqa: BLE001 - not installed or broken: each command says so itself
                    continue
                gc.freeze()


def _answers(path):
    """Whether a server answers on `path` now."""
    try:
        probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        probe.settimeout(5)
        rendezvous.reach(probe.connect, path)
        if rendezvous.peer(probe)[1] != os.getuid():
            return False  # another user's socket, planted there: replaced
        probe.send(protocol.encode(protocol.plain_request("status")))
        return bool(probe.recv(1 << 16))
    except OSError:
        return False


def _zygote(connection, entry_points, log_path, offer):
    """Serve `connection` as a zygote of mlirgpu.execution.processes for a build tool, until it closes it. The workers it
    forks take runs of the server's loaded tools (`offer`: the server's socket and those programs)."""
    from ..execution.worker import serve_zygote

    served_tools.supply_from_server(offer)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    reply(connection, protocol.zygote_answer(os.getpid(), log_path))
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
    # writes anything there (LLVM's messages, the workers, mlirgpu.execution.worker, append to it by name).
    rendezvous.check_folder(directory)
    os.close(rendezvous.own_file(os.path.join(directory, "server.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    _detach(os.path.join(directory, "server.log"))
    server = Server(directory)
    if not server.listen():
        return 0
    server.boot()
    server.build_launcher()
    server.run()
    return 0


if __name__ == "__main__":
    from mlirgpu.server import service as _package_module  # the package's module object, which the workers import

    sys.exit(_package_module.main(sys.argv[1]))
