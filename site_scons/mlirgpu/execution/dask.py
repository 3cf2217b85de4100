"""Distributed compiles on a Dask cluster: `MLIRGPU_EXECUTOR=dask://HOST:PORT` (SCons `GPU_EXECUTOR`). This
module is what the front ends call: whether a cluster is set (`configured_url`), and `compile_remote`.

A compile becomes one Dask task holding what it reads, not paths: the source's bytes, the bytes of the `-l`
libraries, the previous dump record, and the command line with every path relative to one anchor folder (the
deepest folder holding the compile's folder and all its files). A worker (mlirgpu.execution.dask_worker) lays
the files out under a scratch folder in the same shape, runs `mlirgpu compile` there, and returns every file
the compile wrote, its messages and its result; the client writes the files atomically in place. Relative paths
in messages, records and header guards are the client's own; absolute ones are mapped back. Device libraries
and tools are the worker's: they must be the client's, which the toolchain fingerprint proves
(mlirgpu.execution.dask_fingerprint). The job goes only to workers of its fingerprint, and a worker lost, late
or missing sends the compile back here (mlirgpu.execution.dask_cluster).

A worker's answer is data, never instructions: mlirgpu.execution.remote_answer checks it against the files the
client planned itself before anything is written.
"""
import os
import re
import threading
import time
from dataclasses import dataclass, field

from . import remote_answer as remoteanswer
from ..errors import CompileError
from ..util import environment
from ..util.fsutil import LIBRARY_INPUT, SOURCE_INPUT, read_input, remove_quietly, write_atomic
from .dask_cluster import Executor
from .dask_fingerprint import fingerprint

VARIABLE = "MLIRGPU_EXECUTOR"
SCHEME = "dask://"


def configured_url(environ=None):
    """The executor URL set in `environ` (default: this process's), or '' for local compiles."""
    url = environment.value(VARIABLE, environ)
    if url in ("", "local"):
        return ""
    if not url.startswith(SCHEME) or not url[len(SCHEME):].strip("/"):
        raise CompileError(f"{VARIABLE}='{url[:60]}' is not a Dask scheduler address",
                           fix="use dask://HOST:PORT (or unset it to compile on this machine)")
    return url


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
    """The executor's warnings since the last call (each once)."""
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


_executors = {}
_executors_lock = threading.Lock()


def executor(url):
    """The Executor of the scheduler at `url` (a configured_url), one per process."""
    from ..cache.stagecache import open_cache_root

    with _executors_lock:
        if url not in _executors:
            timeout = environment.value("MLIRGPU_EXECUTOR_TIMEOUT")
            _executors[url] = Executor(url, "tcp://" + url[len(SCHEME):].strip("/"),
                                       os.path.join(open_cache_root(), "executor-breaker"), timeout, _pending)
        return _executors[url]


def compile_remote(url, source, output, options):
    """Compile on the cluster at `url` and write the outputs here: a RemoteResult, or None when the compile
    must run on this machine. A failed compile raises its CompileError, as a local one would."""
    import dataclasses

    from ..compile_options import to_argv
    from ..pipeline.dumps import remove_stale_dumps
    from ..pipeline.planning import RECORD_DUMP
    from ..pipeline.record import project_path, read_listed_dumps
    from ..pipeline.scan import planned_outputs
    from ..pipeline.stages import LIBRARY

    if options.substitute:
        return None  # hand-edited stage outputs are a local loop: they stay on this machine
    if options.emit == LIBRARY:
        return None  # a library's files are named by its modules' targets: the answer's checks expect an object
    libraries = list(options.link_libs)
    destinations = [output] + [p for p in (options.header, options.depfile) if p]
    if not all(_plain_destination(os.path.dirname(os.path.abspath(p))) for p in destinations) or \
            (options.dump_dir and not _plain_destination(os.path.abspath(options.dump_dir))):
        return None  # an output this machine cannot write: the local compile says so, as usual
    record = os.path.join(options.dump_dir, options.dump_prefix + RECORD_DUMP) if options.dump_dir else ""
    paths = _Paths([source, output] + libraries + [p for p in (options.header, options.depfile, record) if p])
    inputs = {}
    for path, kind in [(source, SOURCE_INPUT)] + [(library, LIBRARY_INPUT) for library in libraries]:
        try:
            inputs[paths.relative(path)] = read_input(path, kind)  # regular files of bounded size only
        except CompileError:
            return None  # not readable as an input: the local compile reports it as usual
    # What the last compile dumped there, read before the worker's record replaces it (a record is no cache entry).
    previous_dumps = read_listed_dumps(record, project_path(source)) if record else []
    from ..targets import TARGETS

    toolkit_of = ""
    if options.toolkit:  # the worker uses its own toolkit of the same target, proved the same by the fingerprint
        owners = [target.name for target in TARGETS.values() if target.toolchain.owns_toolkit(options.toolkit)]
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
        if record:
            remove_quietly(record)  # as a local compile that failed leaves none: it would describe other dumps
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
    if options.dump_dir:  # what the previous compile dumped here and this one did not (the worker never saw those)
        remove_stale_dumps(options.dump_dir, {os.path.basename(path) for path in dumps}, listed=previous_dumps)
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
    path = environment.value("MLIRGPU_PROFILE")
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
