"""Distributed compiles on a Dask cluster: `MLIRGPU_EXECUTOR=dask://HOST:PORT` (SCons `GPU_EXECUTOR`).

A compile becomes one Dask task holding what it reads, not paths: the source's bytes, the bytes of the `-l`
libraries, the previous dump record, and the command line with every path relative to one anchor folder (the
deepest folder holding the compile's folder and all its files). A worker lays the files out under a scratch
folder in the same shape, runs `mlirgpu compile` there, and returns every file the compile wrote, its messages
and its result; the client writes the files atomically in place. Relative paths in messages, records and header
guards are the client's own; absolute ones are mapped back. Device libraries and tools are the worker's: they
must be the client's, which the toolchain fingerprint proves (`fingerprint`: this package's code, llvmlite's
LLVM, the MLIR tools and every target's tools and device libraries, by content). The client sends its jobs only
to workers of its fingerprint, and a worker refuses a job of another fingerprint.

A worker's answer is data, never instructions: mlirgpu.execution.remote_answer checks it against the files the client
planned itself before anything is written. A worker lost mid-job is run again by the scheduler on another worker
of the job's; when none of them is left the client resubmits the job once, and then (or when no answer came
within `$MLIRGPU_EXECUTOR_WAIT` seconds) compiles here after one warning. A scheduler that cannot be reached, or a
cluster without a worker of our fingerprint, costs one warning and local compiles; the verdict is kept for a
minute in a file of the local cache, so the other processes of a build (Ninja's) skip it.

`mlirgpu worker SCHEDULER` starts a worker with this module as its preload (`dask_setup` checks the toolchain).
"""
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from . import remote_answer as remoteanswer
from ..cache import store
from ..llvm import toolchain
from ..errors import CompileError, CompileWarning
from ..util.fsutil import read_source, write_atomic
from ..version import PACKAGE, __version__, code_folders

VARIABLE = "MLIRGPU_EXECUTOR"
SCHEME = "dask://"
BREAKER_SECONDS = 60
WAIT_VARIABLE = "MLIRGPU_EXECUTOR_WAIT"
MAX_WAIT = 7 * 24 * 3600
POLL_SECONDS = 1.0  # how often a waiting compile checks that a worker it may run on is still in the cluster
RESULT_VARIABLE = "MLIRGPU_RESULT_FILE"  # where `mlirgpu compile` writes its result for a worker to return
_RESULT_NAME = ".mlirgpu-remote-result.json"


def configured_url(environ=None):
    """The executor URL set in `environ` (default: this process's), or '' for local compiles."""
    url = ((environ if environ is not None else os.environ).get(VARIABLE) or "").strip()
    if url in ("", "local"):
        return ""
    if not url.startswith(SCHEME) or not url[len(SCHEME):].strip("/"):
        raise CompileError(f"{VARIABLE}='{url[:60]}' is not a Dask scheduler address",
                           fix="use dask://HOST:PORT (or unset it to compile on this machine)")
    return url


def wait_seconds():
    """How long a compile waits for its worker's answer before compiling here: `$MLIRGPU_EXECUTOR_WAIT` (default
    600, as long as one tool may run), seconds from 1 to a week; anything else is an error naming the variable."""
    text = os.environ.get(WAIT_VARIABLE, "600").strip()
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", text) and 1 <= float(text) <= MAX_WAIT:
        return float(text)
    raise CompileError(f"{WAIT_VARIABLE}='{text[:40]}' is not a number of seconds from 1 to {MAX_WAIT}",
                       fix="set it to e.g. 600, or unset it")


# The toolchain fingerprint.

def _package_digest():
    hasher = hashlib.sha256()
    for folder in code_folders():
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, name), PACKAGE)
                hasher.update(relative.encode() + b"\0" + toolchain.file_digest(os.path.join(folder, name)).encode())
    return hasher.hexdigest()


def toolchain_files(toolkit=""):
    """The files that shape a compile's bytes besides its inputs: the MLIR tools, every target's tools and
    device libraries (`toolkit`: a compile's --toolkit)."""
    from ..compile_options import CompileOptions
    from ..targets import TARGETS

    options = CompileOptions(toolkit=toolkit)
    files = toolchain.found(*(lambda name=name: toolchain.llvm_tool(name) for name in ("mlir-opt", "mlir-translate")))
    for target in TARGETS.values():
        with contextlib.suppress(CompileError):
            files += target.tools(options) + target.device_libraries(options)
    return [path for path in files if path]


def fingerprint(toolkit=""):
    """What a worker must have to compile for us, by content (never by path: machines lay tools out alike or
    not): the version and code of this package, llvmlite's LLVM, and each toolchain file's name and bytes."""
    parts = [__version__, _package_digest(), toolchain.llvmlite_identity()]
    parts += [f"{os.path.basename(os.path.realpath(path))}={toolchain.file_digest(path)}"
              for path in toolchain_files(toolkit)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


# The worker's side.

class Refused(Exception):
    """A job for another toolchain: this worker would not make the same bytes."""


def dask_setup(worker):  # noqa: ARG001 - Dask's preload hook
    """`--preload mlirgpu.execution.dask`: refuse to start without a usable toolchain, and say which one."""
    toolchain.llvm_tool("mlir-translate")  # a missing MLIR fails the worker's start, with the package to install
    print(f"mlirgpu worker: toolchain fingerprint {fingerprint()}", file=sys.stderr, flush=True)


def own_toolkit(kind):
    """This machine's toolkit of the target named `kind` ('' for none: each target finds its own)."""
    if not kind:
        return ""
    from ..compile_options import CompileOptions
    from ..targets import TARGETS

    return TARGETS[kind].toolkit(CompileOptions()) or ""


def worker_fingerprint():
    """This worker's fingerprints: with each target finding its own toolkit (''), and with the toolkit of each
    target given to every target, as a client's --toolkit does."""
    from ..targets import TARGETS

    return {kind: fingerprint(own_toolkit(kind)) for kind in ("", *TARGETS)}


def run_job(job):
    """Run one compile here (on a Dask worker): the written files, messages and result."""
    toolkit = own_toolkit(job["toolkit_of"])
    ours = fingerprint(toolkit)
    if job["fingerprint"] != ours:
        raise Refused(f"toolchain fingerprint {ours}, the job needs {job['fingerprint']}")
    root = tempfile.mkdtemp(prefix="mlirgpu-remote-")
    started = time.perf_counter()
    try:
        for relative, data in job["inputs"].items():
            path = os.path.join(root, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
        for relative in job["folders"]:
            os.makedirs(os.path.join(root, relative), exist_ok=True)
        cwd = os.path.join(root, job["cwd"])
        os.makedirs(cwd, exist_ok=True)
        argv = [arg if kind == "text" else (arg if kind == "relative" else os.path.join(root, arg))
                for kind, arg in job["argv"]] + (["--toolkit", toolkit] if toolkit else [])
        package_parent = os.path.dirname(PACKAGE)
        env = {**os.environ, VARIABLE: "", RESULT_VARIABLE: os.path.join(root, _RESULT_NAME),
               "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
        command_started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", *argv], cwd=cwd, env=env,
                             capture_output=True, check=False)
        command_seconds = time.perf_counter() - command_started
        result = None
        with contextlib.suppress(OSError, ValueError):
            result = store.read_json(os.path.join(root, _RESULT_NAME))
        files = {}
        for folder, _dirs, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root)
                if relative not in job["inputs"] and name != _RESULT_NAME and os.path.isfile(path):
                    with open(path, "rb") as handle:
                        files[relative] = handle.read()
        import socket

        return {"returncode": run.returncode, "stderr": run.stderr.decode("utf-8", "replace"), "files": files,
                "result": result, "root": root, "worker": f"{socket.gethostname()}:{os.getpid()}",
                "seconds": time.perf_counter() - started, "command_seconds": command_seconds}
    finally:
        shutil.rmtree(root, ignore_errors=True)


# The client's side.

@dataclass
class RemoteResult:
    """What a remote compile gives its caller (the fields of pipeline.CompileResult that front ends read)."""

    warnings: list = field(default_factory=list)
    cache_warnings: list = field(default_factory=list)
    dumps: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    stages: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)
    worker: str = ""


_pending = []  # this process's executor warnings, until a front end takes them (take_warnings)


def take_warnings():
    taken = list(_pending)
    _pending.clear()
    return taken


class _Paths:
    """The client's paths relative to one anchor folder, as a worker lays them out."""

    def __init__(self, paths):
        cwd = os.getcwd()
        self.anchor = os.path.commonpath([cwd] + [os.path.dirname(os.path.abspath(path)) for path in paths])
        self.cwd = os.path.relpath(cwd, self.anchor)

    def relative(self, path):
        return os.path.relpath(os.path.abspath(path), self.anchor)

    def argument(self, path):
        return ("absolute", self.relative(path)) if os.path.isabs(path) else ("relative", path)

    def back(self, text, root):
        """`text` from the worker with its scratch folder replaced by the anchor."""
        return text.replace(root + os.sep, self.anchor + os.sep).replace(root, self.anchor)


class Executor:
    """A connection to one Dask scheduler, shared by the compiles of this process."""

    def __init__(self, url, breaker_path, timeout):
        self.url = url
        self.address = "tcp://" + url[len(SCHEME):].strip("/")
        self.breaker_path = breaker_path
        self.timeout = timeout
        self.client = None
        self.lock = threading.Lock()
        self.workers = ({}, 0.0)  # address -> fingerprint, and when it was asked
        self.failed = False

    def _open(self):
        data = store.read_json(self.breaker_path)
        return self.failed or (bool(data) and data.get("where") == self.url and data.get("until", 0) > time.time())

    def _trip(self, why):
        if not self.failed:
            self.failed = True
            store.write_json(self.breaker_path, {"where": self.url, "until": time.time() + BREAKER_SECONDS})
            _pending.append(CompileWarning(f"the Dask executor {self.url} is not used ({why}); compiling on this "
                                           f"machine, and not asking it again for {BREAKER_SECONDS} s"))

    def _connect(self):
        with self.lock:
            if self.client is None:
                from distributed import Client

                self.client = Client(self.address, timeout=self.timeout, set_as_default=False)
            return self.client

    def _matching(self, client, wanted, kind):
        known, asked = self.workers
        if time.time() - asked > 5 or not any(fps.get(kind) == wanted for fps in known.values()):
            known = client.run(worker_fingerprint)
            self.workers = (known, time.time())
        return [address for address, fps in known.items() if fps.get(kind) == wanted]

    def submit(self, job):
        """The worker's answer to `job` and that worker's address, or None when the compile must run here (a
        warning says why, once)."""
        wait = wait_seconds()  # a bad setting is an error whether or not the cluster is asked
        if self._open():
            return None
        try:
            client = self._connect()
            deadline = time.monotonic() + wait
            refused, lost = set(), 0
            for _attempt in range(3):
                matching = [address for address in self._matching(client, job["fingerprint"], job["toolkit_of"])
                            if address not in refused]
                if not matching and lost:
                    return self._here(f"the Dask worker given {job['source']} was lost and no other worker of this "
                                      "toolchain is left")
                if not matching:
                    theirs = sorted({fps.get(job["toolkit_of"], "?") for fps in self.workers[0].values()})
                    self._trip(f"no worker has this toolchain (fingerprint {job['fingerprint']}; the cluster's: "
                               f"{', '.join(theirs) or 'no workers'}); install the same tools and mlirgpu there")
                    return None
                future = client.submit(run_job, job, workers=matching, allow_other_workers=False, pure=False,
                                       key=f"mlirgpu-{os.path.basename(job['source'])}-{os.urandom(6).hex()}")
                try:
                    return self._answer(client, future, matching, deadline)
                except Refused:
                    refused.update(matching)
                    self.workers = ({}, 0.0)
                except _Lost:
                    future.cancel()
                    lost += 1
                    self.workers = ({}, 0.0)
                    if lost == 2:
                        return self._here(f"the Dask workers given {job['source']} were lost twice")
                except _Late:
                    future.cancel()
                    return self._here(f"the Dask cluster {self.url} gave no answer for {job['source']} within "
                                      f"{wait:g} s ({WAIT_VARIABLE})")
            return None
        except Exception as exc:  # noqa: BLE001 - connection and cluster faults of any kind: compile here
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            self._trip(reason)
            return None

    @staticmethod
    def _here(why):
        """None (this compile runs here), after one warning saying `why`; later compiles still ask the cluster."""
        _pending.append(CompileWarning(f"{why}; compiling it on this machine"))
        return None

    def _answer(self, client, future, matching, deadline):
        """`future`'s answer and the worker that gave it; _Lost once none of the `matching` workers it may run on
        is in the cluster (the scheduler would wait for them forever), _Late past `deadline`."""
        from distributed import KilledWorker

        # Waited for with a callback, not `future.result(timeout=...)`: distributed 2026.8's sync raises
        # UnboundLocalError when such a timeout races the answer (seen with 4 workers and 200 queued jobs).
        done = threading.Event()
        future.add_done_callback(lambda _future: done.set())
        while not done.wait(timeout=max(0.05, min(POLL_SECONDS, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise _Late
            if not set(matching) & set(client.nthreads()):
                raise _Lost
        try:
            answer = future.result()
        except KilledWorker:  # it died on every worker the scheduler tried: a job this cluster cannot run
            raise _Lost from None
        holders = client.who_has(future).get(future.key) or ["?"]
        return answer, holders[0]


class _Lost(Exception):
    """Every worker a job may run on left the cluster before answering."""


class _Late(Exception):
    """No answer within $MLIRGPU_EXECUTOR_WAIT seconds."""


_executors = {}
_executors_lock = threading.Lock()


def executor(url):
    from ..cache.stagecache import open_cache_root

    with _executors_lock:
        if url not in _executors:
            try:
                timeout = float(os.environ.get("MLIRGPU_EXECUTOR_TIMEOUT", "5"))
            except ValueError:
                timeout = 5.0
            _executors[url] = Executor(url, os.path.join(open_cache_root(), "executor-breaker"), timeout)
        return _executors[url]


def compile_remote(url, source, output, options):
    """Compile on the cluster at `url` and write the outputs here: a RemoteResult, or None when the compile
    must run on this machine. A failed compile raises its CompileError, as a local one would."""
    import dataclasses

    from ..compile_options import to_argv
    from ..pipeline.planning import RECORD_DUMP
    from ..pipeline.scan import planned_outputs

    if options.substitute:
        return None  # hand-edited stage outputs are a local loop: they stay on this machine
    libraries = list(options.link_libs)
    destinations = [output] + [p for p in (options.header, options.depfile) if p]
    if not all(_plain_destination(os.path.dirname(os.path.abspath(p))) for p in destinations) or \
            (options.dump_dir and not _plain_destination(os.path.abspath(options.dump_dir))):
        return None  # an output this machine cannot write: the local compile says so, as usual
    record = os.path.join(options.dump_dir, options.dump_prefix + RECORD_DUMP) if options.dump_dir else ""
    paths = _Paths([source, output] + libraries + [p for p in (options.header, options.depfile, record) if p])
    inputs = {}
    for path in [source] + libraries:
        try:
            inputs[paths.relative(path)] = read_source(path)  # regular files of bounded size only
        except CompileError:
            return None  # not readable as an input: the local compile reports it as usual
    previous_record = store.read_bytes(record) if record else None
    from ..targets import TARGETS

    toolkit_of = ""
    if options.toolkit:  # the worker uses its own toolkit of the same target, proved the same by the fingerprint
        owners = [target.name for target in TARGETS.values() if target.owns_toolkit(options.toolkit)]
        if len(owners) != 1:
            return None  # a folder no single target claims: only this machine knows what it means
        toolkit_of = owners[0]
    shown = dataclasses.replace(options, toolkit="", link_libs=(), dump_dir="", header="", depfile="")
    argv = [("text", arg) for arg in to_argv(shown)]
    for flag, value in (("--dump-intermediates", options.dump_dir), ("--header", options.header),
                        ("--depfile", options.depfile)):
        if value:
            argv += [("text", flag), paths.argument(value)]
    for library in libraries:
        argv += [("text", "-l"), paths.argument(library)]
    argv += [("text", "-o"), paths.argument(output), paths.argument(source)]
    folders = {os.path.dirname(paths.relative(p)) for p in (output, options.header, options.depfile) if p}
    if options.dump_dir:
        folders.add(paths.relative(options.dump_dir))
    job = {"fingerprint": fingerprint(options.toolkit), "toolkit_of": toolkit_of, "argv": argv, "inputs": inputs,
           "cwd": paths.cwd, "folders": sorted(folders), "source": source}
    started = time.perf_counter()
    limit = remoteanswer.max_bytes(sum(map(len, inputs.values())))  # a bad setting fails before any work
    answered = executor(url).submit(job)
    if answered is None:
        return None
    answer, where = answered
    planned = {paths.relative(p) for p in (output, options.header, options.depfile) if p}
    dumps = [os.path.join(options.dump_dir, name) for name in planned_outputs(source, options)] \
        if options.dump_dir else []
    planned.update(paths.relative(path) for path in dumps)
    depfile = [paths.relative(options.depfile)] if options.depfile else []
    answer = remoteanswer.checked(answer, where, source, planned, depfile, limit)
    _profile(source, time.perf_counter() - started, answer, job)
    root = answer["root"]
    result = answer["result"] or {}
    error = result.get("error")
    if answer["returncode"] != 0 or error:
        if not error:
            raise CompileError(f"the compile on Dask worker {where} failed with exit code "
                               f"{answer['returncode']}: {paths.back(answer['stderr'], root).strip()[-500:]}")
        raise CompileError(paths.back(error["message"], root), file=error["file"] and paths.back(error["file"], root),
                           line=error["line"], fix=error["fix"] and paths.back(error["fix"], root),
                           detail=error["detail"] and paths.back(error["detail"], root))
    for relative, data in sorted(answer["files"].items()):  # each one planned here, checked above
        if depfile and relative == depfile[0]:
            data = _local_depfile(paths.back(data.decode("utf-8"), root))
        write_atomic(os.path.join(paths.anchor, relative), data)
    _remove_stale_dumps(source, options, previous_record, dumps)
    shown_back = [paths.back(text, root) for text in result.get("warnings", [])]
    return RemoteResult(warnings=shown_back, cache_warnings=[paths.back(t, root) for t in result.get("cache_warnings", [])],
                        dumps=dumps, timings=result.get("timings", {}), stages=result.get("stages", {}),
                        trace=_traced_back(result.get("trace", []), paths, root), worker=where)


def _traced_back(events, paths, root):
    """The worker's trace events with its scratch folder replaced by the anchor in their arguments."""
    for event in events:
        args = event.get("args", {})
        if isinstance(args.get("source"), str):
            args["source"] = paths.back(args["source"], root)
    return events


def _plain_destination(folder):
    """Whether `folder` is, or can be made as, a writable folder: its nearest existing part is a folder we may
    write in (else the outputs could not be written here, whatever the worker made)."""
    while not os.path.lexists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
    return os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)


def _profile(source, seconds, answer, job):
    """With $MLIRGPU_PROFILE: one JSON line per remote compile (the client's wait, the worker's time, the bytes
    each way), for the benchmarks' per-job overheads."""
    path = os.environ.get("MLIRGPU_PROFILE")
    if path:
        import json

        line = json.dumps({"source": source, "remote": True, "seconds": seconds, "worker_seconds": answer["seconds"],
                           "command_seconds": answer["command_seconds"],
                           "sent_bytes": sum(map(len, job["inputs"].values())),
                           "returned_bytes": sum(map(len, answer["files"].values()))}, sort_keys=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def _local_depfile(text):
    """The worker's depfile without the files this machine lacks (the worker's own tools, where they live
    elsewhere: the fingerprint proved them the same as ours); Ninja would rebuild forever for a missing one."""
    from ..pipeline.record import make_depfile, parse_depfile

    output, entries = parse_depfile(text)
    return make_depfile(output, [entry for entry in entries if os.path.exists(entry)])


def _remove_stale_dumps(source, options, previous_record, dumps_now):
    """What the previous compile of `source` dumped here and this one did not (the worker never saw those)."""
    from ..pipeline.record import listed_dumps, project_path
    from ..util.fsutil import remove_quietly

    if not previous_record or not options.dump_dir:
        return
    keep = {os.path.basename(path) for path in dumps_now}
    for name in listed_dumps(previous_record, project_path(source)):
        if name not in keep:
            remove_quietly(os.path.join(options.dump_dir, name))
