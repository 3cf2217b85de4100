"""The compile server: one process per user and installation that keeps Python, the package and LLVM warm, so a
`mlirgpu compile` pays neither start-up (the client is mlirgpu.client; `python -m mlirgpu.service FOLDER`
runs a server, which clients start on first use).

A request is one message on the server's Unix socket (SOCK_SEQPACKET, in a folder only its user may enter; the
peer's uid is checked again with SO_PEERCRED, and a request is at most 1 MiB of JSON):

    run       argv, folder, environment and umask of a `mlirgpu compile|list-outputs`, with the client's
              stdin, stdout and stderr (SCM_RIGHTS). The server forks a supervisor, which forks the command:
              it runs `mlirgpu.cli` in the client's folder and environment, writing to the client's own
              streams, and forks its LLVM workers from itself. The supervisor answers `started`, then `exit`
              with the command's exit code, and kills the command if the client goes away first.
    zygote    a build tool's (SCons's) request for workers: a child of the server serves the connection as
              mlirgpu.workers' zygote, forking warm workers for the build until it closes the connection.
    translator  a command's request for a prestarted mlir-translate of a given command line: the server
              keeps two loaded and waiting, hands one over (its pipes, SCM_RIGHTS) and starts the next; only a
              command that translates takes one, so one served from the stage cache starts no tool.
    status    the server's pid, fingerprint, start time, what it served and which WARM_IMPORTS it holds.
    stop      the server exits (after answering).

A `run` or `zygote` request carries the client's fingerprint (mlirgpu.rendezvous): a server of another one
answers `replaced` and exits, so an upgraded or edited installation is never served by old code. The server
exits when idle for `$MLIRGPU_SERVER_IDLE` seconds, or when its socket is removed or taken by another server.
Its own messages (and LLVM's) go to `server.log` in its folder.
"""
import socket as _socket
import contextlib
import gc
import fcntl
import importlib
import json
import os
import select
import signal
import struct
import sys
import tempfile
import time

from . import rendezvous
from .workers import passed_fds

MAX_REQUEST = 1 << 20
# The client library a command imports when its environment sets the variable (a remote stage cache, a Dask
# scheduler): 0.1-0.2 s of imports per command, paid once by the server instead, after the first such command.
WARM_IMPORTS = (("MLIRGPU_REMOTE_CACHE", "redis"), ("MLIRGPU_EXECUTOR", "distributed"))


def _reply(connection, value):
    with contextlib.suppress(OSError):
        connection.send(json.dumps(value).encode("utf-8"))


def peer_uid(connection):
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    _pid, uid, _gid = struct.unpack("3i", connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))
    return uid


class Server:
    def __init__(self, directory):
        self.directory = directory
        self.path = rendezvous.socket_path(directory)
        self.log_path = os.path.join(directory, "server.log")
        self.fingerprint = rendezvous.fingerprint()
        self.started = time.time()
        self.served = {"run": 0, "zygote": 0, "refused": 0, "translator": 0}
        self.children = set()  # supervisors and zygotes
        self.pool = []  # prestarted mlir-translates (process._Prestarted) for the commands that translate
        self.spares = []  # prestarted tools handed to commands, reaped once they end
        self.listener = None
        self.inode = None

    # Start-up: one server per socket, whoever starts it (concurrent first use).

    def listen(self):
        """Bind the socket unless a live server holds it (then return False). Under the folder's lock, so of
        clients starting servers at once, one server binds and the others exit."""
        with open(os.path.join(self.directory, "server.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _answers(self.path):
                return False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
            listener.bind(self.path)
            os.chmod(self.path, 0o600)
            listener.listen(64)
            self.inode = os.stat(self.path).st_ino
        self.listener = listener
        return True

    def boot(self):
        """Import and initialize everything a compile needs, once: requests fork from this state."""
        from . import workers
        from .toolchain import LLVM_MAJOR

        self.entry_points = workers.boot(self.log_path, LLVM_MAJOR)
        from . import api, batch, cli, distributed, planning, scan  # noqa: F401 - requests fork with them

        cli._parser()
        self._prestart()
        gc.freeze()  # the collections of forked commands then leave these objects' pages shared with the server

    def _prestart(self):
        """mlir-translates of this server's environment, loaded and waiting for the next commands' input (two:
        a build runs commands two at a time or more)."""
        from . import mlirtools, process
        from .errors import CompileError

        while len(self.pool) < 2:
            try:
                self.pool.append(process.prestart(mlirtools.translate_argv()))
            except (CompileError, OSError):
                return

    # The loop.

    def run(self):
        idle = rendezvous.idle_seconds()
        last = time.monotonic()
        self.listener.settimeout(1.0)
        while True:
            self._reap()
            if time.monotonic() - last > idle and not self.children:
                break
            if not self._still_ours():
                break
            try:
                connection, _address = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                continue
            try:
                handled = self._handle(connection)
            finally:
                connection.close()
            if handled == "stop":
                break
            if handled == "served":  # asking for the status is no work: it does not keep a server alive
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
        if peer_uid(connection) != os.getuid():
            self.served["refused"] += 1
            print(f"mlirgpu server: refused a connection of uid {peer_uid(connection)}", file=sys.stderr, flush=True)
            return None
        connection.settimeout(10)
        try:
            # Received descriptors close on exec: no tool this server starts may hold a client's streams open.
            data, ancillary, flags, _address = connection.recvmsg(MAX_REQUEST, _socket.CMSG_SPACE(3 * 4),
                                                                  _socket.MSG_CMSG_CLOEXEC)
        except OSError:
            return None
        fds = passed_fds(ancillary)
        try:
            if flags & (_socket.MSG_TRUNC | _socket.MSG_CTRUNC):
                _reply(connection, {"kind": "error", "message": "request too large"})
                return None
            try:
                request = json.loads(data)
                kind = request["kind"]
            except (ValueError, KeyError, TypeError):
                _reply(connection, {"kind": "error", "message": "not a request"})
                return None
            if kind == "status":
                _reply(connection, {"kind": "status", "pid": os.getpid(), "fingerprint": self.fingerprint,
                                    "started": self.started, "served": self.served, "log": self.log_path,
                                    "warm": [module for _variable, module in WARM_IMPORTS if module in sys.modules]})
                return None
            if kind == "stop":
                _reply(connection, {"kind": "stopped", "pid": os.getpid()})
                return "stop"
            if kind == "translator":
                self._hand_over(connection, request.get("argv"))
                return None
            if kind not in ("run", "zygote"):
                _reply(connection, {"kind": "error", "message": f"unknown request {kind!r}"})
                return None
            if request.get("fingerprint") != self.fingerprint:
                _reply(connection, {"kind": "replaced"})  # the client starts a server of its own version
                return "stop"
            if kind == "run" and len(fds) != 3:
                _reply(connection, {"kind": "error", "message": "a run request carries stdin, stdout, stderr"})
                return None
            self.served[kind] += 1
            offered = sorted({ready.argv for ready in self.pool})
            pid = os.fork()
            if pid == 0:
                try:
                    self.listener.close()
                    for ready in self.pool:  # the server's, not this command's
                        ready.close()
                    if kind == "run":
                        _supervise(connection, fds, request, (self.path, offered))
                    else:
                        _zygote(connection, self.entry_points, self.log_path)
                finally:
                    os._exit(1)
            self.children.add(pid)
            if kind == "run":
                self._warm(request.get("env") or {})
            return "served"
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


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

    def _hand_over(self, connection, argv):
        """Give the requesting command a prestarted tool of command line `argv` (its pipes), and start the
        next; `none` when there is none (the command starts the tool itself)."""
        ready = next((item for item in self.pool if list(item.argv) == argv and item.poll() is None), None)
        if ready is None:
            _reply(connection, {"kind": "none"})
            return
        self.pool.remove(ready)
        with contextlib.suppress(OSError):
            connection.sendmsg([json.dumps({"kind": "translator", "pid": ready.pid}).encode()],
                               [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("4i", *ready.handed()))])
        ready.close()  # the command's now (or, if the command went away, nobody's: it ends on EOF)
        self.served["translator"] += 1
        self.spares.append(ready)
        self._prestart()


def _take_prestarted(path, argv):
    """A prestarted `argv` from the server at `path` (process._Prestarted), or None."""
    from . import process, rendezvous

    connection = rendezvous.connect(path)
    if connection is None:
        return None
    try:
        rendezvous.request(connection, {"kind": "translator", "argv": list(argv)})
        data, ancillary, _flags, _address = connection.recvmsg(1 << 12, _socket.CMSG_SPACE(4 * 4),
                                                               _socket.MSG_CMSG_CLOEXEC)
        fds = passed_fds(ancillary)
        reply = rendezvous.decode(data) if data else {}
        if reply.get("kind") == "translator" and len(fds) == 4:
            return process._Prestarted.received(argv, int(reply["pid"]), fds)
        for fd in fds:
            os.close(fd)
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        connection.close()


def _answers(path):
    """Whether a server answers on `path` now."""
    try:
        probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        probe.settimeout(5)
        probe.connect(path)
        probe.send(b'{"kind": "status"}')
        return bool(probe.recv(1 << 16))
    except OSError:
        return False


def _supervise(connection, fds, request, offer):
    """The supervisor of one `run`: fork the command, tell the client, and wait for the command's exit code (sent
    on a pipe once its outputs are written and the client's streams closed, so the client goes on while the
    command winds down its workers) or its death, or for the client to go away (the command is killed)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            connection.close()
            os.close(done_read)
            _command(fds, request, offer, done_write)
        except BaseException:  # noqa: BLE001 - a bug of ours before the command's own error boundary
            import traceback

            traceback.print_exc()
        finally:
            os._exit(1)
    os.close(done_write)
    for fd in fds[:2]:  # the client's streams are the command's; a build tool waits until all copies close
        os.close(fd)
    _reply(connection, {"kind": "started", "pid": os.getpid()})
    ended = os.pidfd_open(pid)
    while True:
        ready, _w, _x = select.select([connection, ended, done_read], [], [])
        told = os.read(done_read, 16) if done_read in ready else b""
        if told.strip().lstrip(b"-").isdigit():
            os.close(fds[2])
            _reply(connection, {"kind": "exit", "code": int(told)})
            os.waitpid(pid, 0)
            os._exit(0)
        if ended in ready or done_read in ready:  # ended without its code: it died
            _done, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            if code < 0:  # the command itself died: a bug of ours, said as the command would
                with contextlib.suppress(OSError):
                    os.write(fds[2], f"mlirgpu: error: internal error: the compile ended by signal {-code} "
                                     "(fix: please report it; MLIRGPU_SERVER=off compiles without the server)\n"
                             .encode())
                code = 1
            _reply(connection, {"kind": "exit", "code": code})
            os._exit(0)
        if connection in ready:  # the client sent something or went away: either way it no longer waits
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # its workers die with it
            os.waitpid(pid, 0)
            os._exit(0)


def _command(fds, request, offer, done):
    """Run `mlirgpu <argv>` as the client would have run it: its streams, folder, environment and umask; a
    prestarted mlir-translate of the server's (`offer`: its socket and their command lines) is taken when the
    command translates with the same command line (the client's environment finds the same tool).
    The exit code goes to pipe `done` once the client's streams are closed here (a build tool waits for them)."""
    from . import process, toolchain, workers
    from .workers import die_with_parent

    die_with_parent(os.getppid())
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
    for fd in fds:  # one copy of each of the client's streams, so that closing 0-2 below releases them
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, encoding="utf-8", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    toolchain.forget()
    tempfile.tempdir = None  # found again from the client's TMPDIR
    path, offered = offer
    for argv in offered:
        process.supply(argv, lambda argv=argv: _take_prestarted(path, argv))
    workers.fork_here()
    code = 1
    try:
        os.chdir(request["cwd"])
        from .cli import main

        code = main(list(request["argv"]))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except OSError as exc:
        print(f"mlirgpu: error: cannot enter {request['cwd']}: {exc.strerror}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    for fd in (0, 1, 2):
        os.close(fd)
    workers.shutdown(wait=False)  # its workers' logs and scratch folders go, as at the end of an in-process command
    os.write(done, b"%d" % code)
    os._exit(code)  # its idle workers end with it


def _zygote(connection, entry_points, log_path):
    """Serve `connection` as a zygote of mlirgpu.workers for a build tool, until it closes it."""
    from .workers import serve_zygote

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _reply(connection, {"kind": "zygote", "pid": os.getpid(), "log": log_path})
    connection.settimeout(None)
    serve_zygote(connection, entry_points)


def main(directory):
    with contextlib.suppress(OSError):
        os.setsid()  # no terminal's signals: the server outlives the command that started it
    with open(os.path.join(directory, "server.log"), "a"):
        pass
    server = Server(directory)
    if not server.listen():
        return 0
    server.boot()
    server.run()
    return 0


if __name__ == "__main__":
    from mlirgpu import service as _package_module  # the package's module object, which the workers import

    sys.exit(_package_module.main(sys.argv[1]))
