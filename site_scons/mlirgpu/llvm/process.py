"""Running external tools: argument lists only (never a shell), a time limit, and failures as CompileErrors.

The limit is `$MLIRGPU_TOOL_TIMEOUT` seconds (default 600) per tool run. A tool killed by a signal or past the
limit is reported by name; a non-zero exit is returned to the caller, which knows how to read that tool's output.
"""
import contextlib
import contextvars
import fcntl
import os
import resource
import select
import signal
import subprocess
import time

from ..errors import CompileError
from ..util import environment

# Per-compile tool statistics {tool: [runs, seconds, path]} while a compile collects them (pipeline.compile_file).
tool_stats = contextvars.ContextVar("mlirgpu_tool_stats", default=None)


class ToolCrashed(CompileError):
    """A tool was killed by a signal (a crash, not a diagnostic): a caller may know another way round."""


class ToolTimedOut(CompileError):
    """A tool ran past the time limit: not the input's fault, so no caller runs it again another way round."""


def timeout():
    """Seconds a tool may run: `$MLIRGPU_TOOL_TIMEOUT` (default 600), a number from 1 to a week; anything else
    is an error naming the variable, never a silent default."""
    return environment.value("MLIRGPU_TOOL_TIMEOUT")


def compile_processes():
    """How many processes one compile may keep busy at once (mlir-translate runs over parts of a file's modules,
    forked stage runners over chunks of them): `$MLIRGPU_COMPILE_PROCESSES`, a whole number from 1 (all in
    turn, in the compile's own process), else the CPUs this process may run on."""
    return environment.value("MLIRGPU_COMPILE_PROCESSES") or len(os.sched_getaffinity(0))


def bounded(argv, seconds, input=None, cwd=None):
    """`subprocess.run(argv)` capturing its output, in its own process group, which is killed whole when the
    time is up (a tool that is a script would otherwise leave a child holding the pipes open)."""
    process = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd=cwd)
    try:
        stdout, stderr = process.communicate(input, timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.communicate()
        raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


# MLIR's tools write stderr unbuffered (LLVM's errs()): a module printed there (a user's `print-ir`, many
# diagnostics) comes a token at a time, 3,600 writes for 12 KB. Woken for each, the reader would spend more CPU
# than the tool; after more than a few reads this short it lets the output gather for a millisecond before each
# next one (a pipe holds 64 KB: the tool never waits on it). Not before: a run's own last bytes and its status
# come apart, and a millisecond after each was 4 ms of a small compile's 40 (two runs). Nor once the tool has
# ended (its status came): what it wrote is all there.
DRIBBLE_BYTES = 4096
DRIBBLE_READS = 8
DRIBBLE_SECONDS = 0.001


class _Prestarted:
    """A tool started before its input exists: it has loaded its program and waits on its stdin (MLIR's tools
    spend most of a small run loading libMLIR). `sh` runs it and writes its exit status on a pipe, so whichever
    process holds the pipes (a fork of the one that started it) can use it, once.

    It is started with posix_spawn (no copy of a large server's page tables), its pipes moved to 0-3 in the
    child: POSIX shells (dash) read one digit in a redirection, and a busy server's descriptors have two."""

    def __init__(self, argv):
        self.argv = tuple(argv)
        ends = [os.pipe() for _ in range(4)]  # stdin, stdout, stderr, status
        # The child's ends, above 9 first: no move onto 0-3 below can overwrite one not yet moved.
        theirs = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in
                  (ends[0][0], ends[1][1], ends[2][1], ends[3][1])]
        for read, write in ends:
            for fd in (read, write):
                if fd not in (ends[0][1], ends[1][0], ends[2][0], ends[3][0]):
                    os.close(fd)
        try:
            self.pid = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", '"$@"; echo $? >&3', "sh", *argv], os.environ,
                                      file_actions=[(os.POSIX_SPAWN_DUP2, fd, number)
                                                    for number, fd in enumerate(theirs)], setsid=True)
        except OSError:
            for fd in [ends[0][1], ends[1][0], ends[2][0], ends[3][0]]:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        self.stdin, self.stdout, self.stderr, self.status = ends[0][1], ends[1][0], ends[2][0], ends[3][0]

    @classmethod
    def received(cls, argv, pid, fds):
        """A tool another process prestarted and handed over (its stdin, stdout, stderr and status pipes)."""
        ready = cls.__new__(cls)
        ready.argv, ready.pid = tuple(argv), pid
        ready.stdin, ready.stdout, ready.stderr, ready.status = fds
        return ready

    def handed(self):
        """Its pipes, for handing it over to the process that will run it (mlirgpu.server.tools); from now on the
        caller's to close, not this object's."""
        fds = [self.stdin, self.stdout, self.stderr, self.status]
        self.stdin = self.stdout = self.stderr = self.status = None
        return fds

    def poll(self):
        """None while the tool waits or runs (asked by the process that started it, its parent)."""
        with contextlib.suppress(ChildProcessError):
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if not done:
                return None
            return os.waitstatus_to_exitcode(status)
        return 1

    def close(self):
        """Close this process's ends of the pipes (the tool ends on EOF if no one else holds them)."""
        for name in ("stdin", "stdout", "stderr", "status"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)  # never closed twice: the number may belong to another file by then
                with contextlib.suppress(OSError):
                    os.close(fd)

    def communicate(self, argv, input, seconds):
        """Give the tool its input; its CompletedProcess (a signal's exit as a negative code, as Popen's)."""
        deadline = time.monotonic() + seconds
        out, err, status = self.stdout, self.stderr, self.status
        chunks = {out: [], err: [], status: []}
        pending = memoryview(input or b"")
        os.set_blocking(self.stdin, False)
        open_fds = set(chunks)
        short_reads = 0
        try:
            while open_fds or pending is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    with contextlib.suppress(OSError):
                        os.killpg(self.pid, signal.SIGKILL)
                    raise subprocess.TimeoutExpired(argv, seconds)
                writers = [self.stdin] if pending is not None else []
                readable, writable, _ = select.select(list(open_fds), writers, [], left)
                if writable:
                    try:
                        pending = pending[os.write(self.stdin, pending[:1 << 16]) :]
                    except BrokenPipeError:
                        pending = memoryview(b"")
                    if not pending:
                        os.close(self.stdin)
                        self.stdin = pending = None
                dribble = False
                for fd in readable:
                    data = os.read(fd, 1 << 16)
                    if data:
                        chunks[fd].append(data)
                        if fd != status and len(data) < DRIBBLE_BYTES:
                            short_reads += 1
                            dribble = short_reads > DRIBBLE_READS
                    else:
                        open_fds.discard(fd)
                if dribble and pending is None and not chunks[status]:
                    time.sleep(DRIBBLE_SECONDS)
        finally:
            self.close()
        text = b"".join(chunks[status]).strip()
        code = int(text) if text.isdigit() else -signal.SIGKILL
        code = -(code - 128) if code > 128 else code
        return subprocess.CompletedProcess(argv, code, b"".join(chunks[out]), b"".join(chunks[err]))


_suppliers = {}  # program (real path) -> a function giving this process a started run of an argv, or None


def prestart(argv):
    """Start `argv` now, to be run later with `run(argv, ...)` (see `supply`) without the start-up (the compile
    server does this for mlir-translate where it cannot keep a fork server, mlirgpu.execution.forkserver)."""
    return _Prestarted(argv)


def supply(program, supplier):
    """Ask `supplier(argv)` for a started run whenever this process runs `program`: the compile server keeps
    MLIR's and LLVM's tools loaded and hands a fresh run to a process that needs one (a command in a runner, a
    build's worker, SCons itself), so one that needs none (its stages came from the cache, or it only lists
    outputs) costs no tool start-up."""
    _suppliers[os.path.realpath(program)] = supplier


def forget_suppliers():
    """Start every tool here from now on: in a process forked from one with suppliers, whose runs (the pipes of
    a fork server, a server's socket) belong to that process."""
    _suppliers.clear()


def supplied(program):
    """Whether this process has a supplier of runs of `program` (see `supply`)."""
    return os.path.realpath(program) in _suppliers


def handed_run(argv, pid, fds):
    """A run of `argv` another process started (its pid; our ends of its stdin, stdout, stderr and status
    pipes), for a supplier to return."""
    return _Prestarted.received(argv, pid, fds)


def same_tool(argv):
    """A command line as prestarted tools are matched: the program by its real path (a build's search path may
    name `/bin/mlir-translate-22` where the server found `/usr/bin/mlir-translate-22`, the same file)."""
    return (os.path.realpath(argv[0]), *argv[1:])


# The resource limits a command run for another process (a compile server's runner, an LLVM worker) takes from it.
LIMITS = ("FSIZE", "NOFILE", "CORE", "AS", "DATA", "CPU")


def limits():
    """This process's limits of LIMITS as {name: [soft, hard]} (-1: none), for a process that runs a command for
    it (`taken`); CPU's soft limit is the seconds left to this process, which is what a command elsewhere may use."""
    found = {}
    for name in LIMITS:
        soft, hard = resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))
        if name == "CPU" and soft != resource.RLIM_INFINITY:
            soft = max(1, soft - int(_cpu_seconds()))
        found[name] = [soft, hard]
    return found


def exceeding(wanted):
    """The names of `wanted` (`limits()` of another process) whose soft limit is above this process's hard one:
    a command run here could not write, open or use as much as it would have there."""
    return [name for name, (soft, _hard) in wanted.items()
            if _at_most(soft, resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))[1]) != soft]


# Limits whose value changes what a tool does (it cannot write, allocate or run as much): while a process runs under
# other values of these than its own (`taken`), it starts its tools itself, with those limits, instead of taking runs
# from a fork server (`supply`), whose runs have the limits of the process that started that fork server.
TOOL_LIMITS = ("FSIZE", "AS", "DATA", "CPU")
_other_limits = False  # whether this process runs under other TOOL_LIMITS than its own now


@contextlib.contextmanager
def taken(umask, wanted):
    """Run the body with the umask and soft limits of the process it runs for (`wanted`: its `limits()`), as it
    would have run there, then take this process's own back: a compile server's runner and LLVM worker outlive
    the command, and each command is another client's. Hard limits stay (a process cannot raise one again);
    a soft limit above this process's hard one is held to it (the server sees to it that none is)."""
    global _other_limits
    own_umask = os.umask(umask)
    own = {}
    before = _other_limits
    try:
        for name, (soft, _hard) in wanted.items():
            kind = getattr(resource, f"RLIMIT_{name}")
            own[kind] = resource.getrlimit(kind)
            if name == "CPU" and soft != resource.RLIM_INFINITY:
                soft += int(_cpu_seconds()) + 1  # the seconds left, counted from what this process has used
            resource.setrlimit(kind, (_at_most(soft, own[kind][1]), own[kind][1]))
            _other_limits = _other_limits or (name in TOOL_LIMITS and resource.getrlimit(kind)[0] != own[kind][0])
        yield
    finally:
        _other_limits = before
        for kind, value in own.items():
            resource.setrlimit(kind, value)
        os.umask(own_umask)


def well_formed_limits(value):
    """Whether `value` (from a request) is a `limits()`: every name of LIMITS, each two whole numbers."""
    return (isinstance(value, dict) and sorted(value) == sorted(LIMITS)
            and all(isinstance(pair, list) and len(pair) == 2 and all(type(n) is int and n >= -1 for n in pair)
                    for pair in value.values()))


def _at_most(soft, hard):
    if hard == resource.RLIM_INFINITY:
        return soft
    return hard if soft == resource.RLIM_INFINITY or soft > hard else soft


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(argv, what, *, input=None, cwd=None):
    """Run `argv`; returns the CompletedProcess (bytes) when it exited by itself, else raises CompileError."""
    return run_all([(argv, what, input)], cwd)[0]


def run_all(runs, cwd=None):
    """`run` of each `(argv, what, input)` of `runs`, all at the same time (each tool is its own process; a
    thread here only waits for one): their CompletedProcesses in order. A failure is raised once every run has
    ended, the first in order. Runs are asked of the suppliers (`supply`) here, one after another, unless they
    must run in the folder `cwd` (a supplier's tool was started in its own)."""
    begun = [(time.perf_counter(), None if cwd else _supplied_run(argv)) for argv, _what, _input in runs]
    if len(runs) == 1:
        ended = [_ended(*runs[0], begun[0][1], cwd)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(runs)) as pool:
            ended = list(pool.map(lambda run, ready: _ended(*run, ready, cwd), runs, [ready for _t, ready in begun]))
    for (argv, _what, _input), (started, _ready), (result, seconds) in zip(runs, begun, ended):
        stats = tool_stats.get()
        if stats is not None and seconds is not None:
            entry = stats.setdefault(os.path.basename(argv[0]), [0, 0.0, argv[0]])
            entry[0] += 1
            entry[1] += seconds - started
    for (argv, what, _input), (result, _seconds) in zip(runs, ended):
        if isinstance(result, BaseException):
            raise result
        if result.returncode < 0:
            raise _crashed(argv, what, result)
    return [result for result, _seconds in ended]


def _supplied_run(argv):
    supplier = _suppliers.get(os.path.realpath(argv[0])) if _suppliers and not _other_limits else None
    return supplier(argv) if supplier else None


def _ended(argv, what, input, ready, cwd=None):
    """(the CompletedProcess, or the CompileError that ends the run, raised here; when it ended)."""
    try:
        try:
            result = ready.communicate(argv, input, timeout()) if ready else bounded(argv, timeout(), input, cwd)
        except subprocess.TimeoutExpired as exc:
            raise ToolTimedOut(f"{what}: {os.path.basename(argv[0])} did not finish within {timeout():g} s",
                               fix="set MLIRGPU_TOOL_TIMEOUT to allow longer, or check the tool") from exc
        except OSError as exc:
            raise CompileError(f"{what}: cannot run {argv[0]}: {exc.strerror}") from exc
    except CompileError as exc:
        return exc, None
    return result, time.perf_counter()


def _crashed(argv, what, result):
    try:
        signame = signal.Signals(-result.returncode).name
    except ValueError:
        signame = f"signal {-result.returncode}"
    import shlex  # only here: a crash is rare, and every worker imports this module at start-up

    output = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
    return ToolCrashed(f"{what}: {os.path.basename(argv[0])} crashed ({signame})", fix="see the tool's output with -v",
                       detail=output + "\nrepro: " + shlex.join(argv))
