"""A tool kept loaded: its process stops before main and forks a fresh run for each request (forkserver.c).

MLIR's tools spend most of a small run loading libMLIR and libLLVM (about 30 of the 34 ms of CPU that
mlir-translate takes for a small module). Prestarting a process per run only moves that cost off the critical
path; on a busy machine every run still pays it. A fork server pays it once: each run is a fork of a process that
has loaded everything and run nothing of main, so its output, messages and exit status are those of a fresh run.

The compile server keeps one per tool of TOOLS it finds (`loadable`; mlirgpu.server.tools) and hands whoever runs
the tool a fresh run's streams; a worker that no server supplies keeps its own (mlirgpu.execution.worker). The
preloaded library (`library`) is compiled from forkserver.c with the system's C compiler the first time, into the
server's private folder. A tool that is not a dynamically linked ELF program (a wrapper script), a missing
compiler or a fork server that does not answer leave the caller starting the tool itself (or, in the compile
server, prestarting mlir-translate)."""
import _socket
import contextlib
import errno
import hashlib
import os
import shlex
import shutil
import signal
import struct
import subprocess
import tempfile

from . import rendezvous
from ..errors import CompileError
from ..llvm import toolchain

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver.c")
TOOLS = ("mlir-translate", "mlir-opt", "llvm-mc", "ld.lld", "llc")  # the dynamically linked tools a compile runs
# Those whose main registers what it needs and then calls LLVM's command-line parser once, before reading any
# argument: their servers fork at that call (forkserver.c), and a run starts registered (a forked mlir-opt run
# spends about 2 ms of CPU registering every dialect and pass before it reads its arguments). ld.lld parses
# its own way.
FORKED_AT_PARSE = ("mlir-translate", "mlir-opt", "llvm-mc", "llc")
MAX_REQUEST = 1 << 20  # forkserver.c's MAX_REQUEST


def tool_name(program):
    """The tool a program is, whatever its path and version suffix say: /usr/lib/llvm-22/bin/mlir-opt and
    mlir-opt-22 are mlir-opt."""
    name = os.path.basename(program)
    stem, _dash, version = name.rpartition("-")
    return stem if stem and version.isdigit() else name


def loader_environment(environment):
    """The variables that change how a program is loaded (the dynamic loader's LD_*, glibc's tunables): a run
    whose environment differs in them from the fork server's would have loaded differently, so it is not forked."""
    return {name: value for name, value in environment.items() if name.startswith("LD_") or name == "GLIBC_TUNABLES"}
READY_SECONDS = 30  # loading libMLIR takes tens of ms; a machine swapping hard, far longer
ANSWER_SECONDS = 5  # a fork takes a millisecond: a fork server this slow is stuck, and the compile server waits


def library(directory):
    """The preload library built from forkserver.c in `directory` (the compile server's folder, checked private;
    once per version of the source) with `$CC` or cc, or None with the reason (no C compiler, or it failed).
    A library found there is loaded only if it is this user's own plain file that no one else may write (one
    planted while the folder was open to others is another user's: it is removed and built anew)."""
    with open(SOURCE, "rb") as file:
        digest = hashlib.sha256(file.read()).hexdigest()[:16]
    path = os.path.join(directory, f"forkserver-{digest}.so")
    try:
        os.close(rendezvous.own_file(path, os.O_RDONLY))
        return path, None
    except FileNotFoundError:
        pass
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)  # not ours: never loaded
    compiler = shlex.split(os.environ.get("CC", "")) or [shutil.which("cc") or shutil.which("gcc") or "cc"]
    try:
        # Built in a folder of its own made now (mkdtemp: private, a fresh name), so nothing planted is written
        # through; then whole or absent under its name (another server may be building it at the same moment).
        with tempfile.TemporaryDirectory(dir=directory, prefix=".forkserver-") as scratch:
            partial = os.path.join(scratch, "forkserver.so")
            built = subprocess.run([*compiler, "-shared", "-fPIC", "-O2", "-o", partial, SOURCE, "-ldl"],
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
            if built.returncode != 0:
                return None, (f"{compiler[0]} failed on forkserver.c: "
                              f"{built.stderr.decode(errors='replace').strip()[:500]}")
            os.chmod(partial, 0o700)
            os.replace(partial, path)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"cannot build the fork server: {exc}"
    return path, None


def loadable(tools=TOOLS):
    """The tools of `tools` (names of TOOLS) that a fork server can keep loaded here, {tool: its program's real
    path}: those found (mlirgpu.llvm.toolchain) that are dynamically linked programs. A missing tool, or a
    wrapper script, is left out: whoever runs it starts it per run. What the compile server and a worker that
    no server supplies each keep fork servers of, which load the preload library (`library`)."""
    found = {}
    for tool in tools:
        try:
            program = os.path.realpath(toolchain.llvm_tool(tool))
        except CompileError:
            continue
        if is_dynamic_program(program):
            found[tool] = program
    return found


def is_dynamic_program(path):
    """Whether `path` is a dynamically linked 64-bit little-endian ELF program (it names an interpreter, the
    dynamic loader), the only kind a preloaded library can stop before main: a script would stop its
    interpreter instead, and a static program never loads the library."""
    try:
        with open(path, "rb") as file:
            header = file.read(64)
            if len(header) < 64 or header[:6] != b"\x7fELF\x02\x01":
                return False
            (table,) = struct.unpack_from("<Q", header, 0x20)  # e_phoff: where the program headers start
            entry_size, entries = struct.unpack_from("<HH", header, 0x36)  # e_phentsize, e_phnum
            file.seek(table)
            headers = file.read(entry_size * entries)
    except (OSError, struct.error):
        return False
    PT_INTERP = 3
    return any(struct.unpack_from("<I", headers, offset)[0] == PT_INTERP
               for offset in range(0, len(headers) - 3, entry_size or 1))


class ForkServer:
    """The tool `program` loaded and waiting in a fork server (started by its owner: the compile server, or a
    worker that no server supplies)."""

    def __init__(self, program, preload, bind_now=True, at_parse=None):
        """`bind_now`: the server resolves every symbol of the tool's libraries as it loads them (LD_BIND_NOW),
        about 12 ms once, so no run forked from it resolves them again (2-4 ms of each small mlir-opt run's CPU,
        measured); one that serves a run or two is better off binding lazily. `at_parse`: fork at the tool's
        command-line parse, not before main (by default, for the tools of FORKED_AT_PARSE); `forks_at` says where
        it does, once it has answered ("parse" or "main")."""
        if at_parse is None:
            at_parse = tool_name(program) in FORKED_AT_PARSE
        self.program = program  # its real path
        # Checked again before each load (OSError if no longer so): a folder of this user's closed to others,
        # holding the library as this user's own plain file.
        try:
            rendezvous.check_folder(os.path.dirname(preload))
        except rendezvous.Unavailable as exc:
            raise PermissionError(errno.EPERM, str(exc)) from None
        os.close(rendezvous.own_file(preload, os.O_RDONLY))
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        ours.setblocking(True)
        ours.settimeout(READY_SECONDS)
        self.loader = loader_environment(os.environ)
        environment = dict(os.environ, LD_PRELOAD=preload, MLIRGPU_FORKSERVER_FD=str(theirs.fileno()),
                           **({"LD_BIND_NOW": "1"} if bind_now else {}),
                           **({"MLIRGPU_FORKSERVER_AT_PARSE": "1"} if at_parse else {}))  # runs: the caller's
        os.set_inheritable(theirs.fileno(), True)
        try:
            # Its own session: it outlives a kill of the compile server's process group long enough to report
            # the runs it started (it ends when this socket closes and its last run has ended).
            self.pid = os.posix_spawn(program, [program], environment, setsid=True,
                                      setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD),
                                      file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)])
        finally:
            theirs.close()
        self.socket = ours
        self.ready = False
        self.forks_at = None

    def run(self, argv, folder, environment):
        """Fork a run of `argv` (argv[0] names this program, as the caller spells it) in `folder` with
        `environment`: its pid and this side's ends of its stdin, stdout, stderr and status pipes (as
        mlirgpu.llvm.process._Prestarted holds them). None if the run would not be the same as a fresh one (another
        loader environment) or the request is too large to send (the caller then runs the tool itself), or if
        the fork server is gone or refused (it is then closed)."""
        if loader_environment(environment) != self.loader:
            return None
        words = [folder, str(len(argv)), *argv, *(f"{name}={value}" for name, value in environment.items())]
        encoded = [os.fsencode(word) for word in words]
        if any(b"\0" in word for word in encoded) or any(b"=" in os.fsencode(name) for name in environment):
            return None
        request = b"".join(word + b"\0" for word in encoded)
        if len(request) > MAX_REQUEST:
            return None
        ends = [os.pipe() for _ in range(4)]
        mine = [ends[0][1], ends[1][0], ends[2][0], ends[3][0]]
        theirs = [ends[0][0], ends[1][1], ends[2][1], ends[3][1]]
        try:
            if not self.ready:
                said = self.socket.recv(64)
                self.ready = said in (b"ready main", b"ready parse")
                if not self.ready:
                    raise OSError("the fork server did not start")
                self.forks_at = said.split()[1].decode()
                self.socket.settimeout(ANSWER_SECONDS)
            try:
                self.socket.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("4i", *theirs))])
            except OSError as exc:
                if exc.errno != errno.EMSGSIZE:
                    raise
                return self._abandon(mine)  # more than the socket takes at once: the caller runs the tool
            pid = int(self.socket.recv(64))
            if pid <= 0:
                raise OSError("the fork server refused")
        except (OSError, ValueError):
            self.close()
            return self._abandon(mine)
        finally:
            for fd in theirs:
                os.close(fd)
        return pid, mine

    @staticmethod
    def _abandon(fds):
        for fd in fds:
            os.close(fd)
        return None

    def close(self):
        """Let it end (after its runs in flight); in a process forked from its owner, drop the owner's copy."""
        self.socket.close()
        self.ready = False

    def reap(self):
        """Whether it has ended (asked by the process that started it)."""
        try:
            done, _status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return True
        return bool(done)
