"""The front ends' one door to running compiles: the SCons tool's build session, the `mlirgpu compile` command's
compile, the Python API's, and a compile server's runner. Behind it is the speed machinery, which no front end
touches: this process's worker pool (mlirgpu.execution.pool), prestarted while a build tool reads its build
files, forked from a zygote when a build runs several compiles at once, taken from a running compile server
when there is one; batches of translations made ahead (mlirgpu.execution.batch), handed to the pipeline as its
translator and asked for only by a compile that translates; Dask (mlirgpu.execution.dask) when an executor is
named.
"""
import atexit
import os
import time

from .pool import Pool
from ..llvm.process import ToolTimedOut
from ..pipeline.translation import OWN, Translated
from ..util import environment

_POOL = Pool()  # this process's workers
# At exit every idle worker is told to end, and not waited for: one between compiles ends on that at once (it
# writes nothing more), and the waits, each a round trip to the zygote that reaps it, were 10-15 ms at the end
# of every build and command. A worker still inside a compile is not idle: it dies with this process.
atexit.register(_POOL.shutdown, False)


def compile_file(source, options, environment=None):
    """`pipeline.compile_source(source, options)` in a worker: the host object's bytes, the jobs, dumps and
    warnings (a pipeline.CompileResult). `environment`: the one tools are found in (default: this process's)."""
    return _in_worker("compile_file", source, options, environment=environment)


def compile_to_object(source, output, options, environment=None, translator=OWN):
    """`pipeline.compile_to_object(source, output, options)` in a worker, with `translator` (the pipeline's own,
    or a pipeline.translation.Translated of a translation made here)."""
    return _in_worker("compile_to_object", source, output, options, environment=environment, translator=translator)


def _in_worker(entry, source, *args, environment, translator=OWN):
    """`entry` in a worker, handed this process's scan of the source when it made one (a build tool's emitters
    scan every source they declare), so the worker's compile does not scan it again."""
    from ..pipeline.scan import known_scan  # loaded by then wherever a scan was made

    scan = known_scan(source)
    with _POOL.lease() as worker:
        return worker.call(entry, source, *args, what=source, where=(source, None), environ=environment,
                           translator=translator, scan=scan)


def cluster(url):
    """The Dask scheduler `url` names (dask://HOST:PORT), checked, or '' when it is blank; raises CompileError.
    The module that checks it is loaded only when one is named (most builds never need it)."""
    if not url.strip():
        return ""
    from . import dask as distributed

    return distributed.configured_url({distributed.VARIABLE: url})


def _on_cluster(url, source, output, options, tell):
    """The compile on the Dask cluster at `url`, or None when it must run on this machine (its warnings told)."""
    from . import dask as distributed

    result = distributed.compile_remote(url, source, output, options)
    for warning in distributed.take_warnings():
        tell(warning)
    return result


def compile_command(source, output, options, tell):
    """The compile of a command (`mlirgpu compile`): on the Dask cluster $MLIRGPU_EXECUTOR names, else (or when
    the cluster sends it back) in a worker started first (a fork of this process when it runs no other thread,
    which skips a new interpreter and the imports made here), whose LLVM start-up overlaps this process
    translating the source meanwhile; the worker asks for that translation only if its compile translates. A
    worker already waiting (a compile server's runner keeps one) translates what it needs itself: nothing, when
    the stage cache holds the compile. `tell(text)` shows one line of ours."""
    from . import dask as distributed

    url = distributed.configured_url()
    if url:
        result = _on_cluster(url, source, output, options, tell)
        if result is not None:
            return result
    warm = _POOL.warm()
    ahead = not warm and _size(source) <= AHEAD_MAX_BYTES
    _POOL.booting_here = () if ahead else ("mlir-translate",)  # else the worker translates: its tool loads now
    _POOL.prestart(1)
    from .batch import translate_many

    started = time.perf_counter()
    try:
        translated = translate_many([source], at_least=1).get(source) if ahead else None  # failures: the worker's
    except ToolTimedOut as exc:  # raised only if the compile translates (a cached one never does)
        translated = exc
    translating = time.perf_counter() - started
    result = compile_to_object(source, output, options, None, Translated(_given(translated)) if translated else OWN)
    if translated:
        result.timings["translate"] = translating
    return result


# A source bigger than this is translated by its worker, not ahead here: the worker's start-up is small beside
# its compile, and this process would hold a copy of the text, its scan, pieces and translation (67 MB for a
# file of 4000 small modules).
AHEAD_MAX_BYTES = 1 << 20


def _size(source):
    try:
        return os.path.getsize(source)
    except OSError:
        return 0  # the compile says why it cannot read it


def _given(translated):
    """The ahead translation for a Translated translator: the entry, or the timeout that translating it met."""
    def given():
        if isinstance(translated, ToolTimedOut):
            raise translated
        return translated

    return given


class BuildSession:
    """The compiles of one build tool's run (SCons). While the build files are read, the tool names each source
    it expects to compile (`expect`): the first ones start as many workers as the build runs jobs at once
    (`jobs()`, read when needed: the build files may set it), forked from one zygote with more than one, and
    every one joins background batches of translations (mlirgpu.execution.batch), started at once, or, with a
    remote cache, by the first compile that needs a translation. Then each compile (`compile`, then `done`)
    runs on the Dask cluster when one is named, else in a worker, its translator giving the batch's translation
    when the compile asks for one. When the process ends the session writes the build's trace, says what the
    compiles did (MLIRGPU_STATS=1) and spares SCons's node graph the collector. `tell(text)` shows one line."""

    def __init__(self, jobs, tell):
        self.jobs = jobs
        self.tell = tell
        self.expected = 0
        self.warm_tools = ()  # the tools whose fork servers the workers start (see expect)
        self.batches = None
        self.stages = []  # each compile's stages (ran or cached), for the line MLIRGPU_STATS=1 prints
        self.stats = False  # MLIRGPU_STATS, read when the tool is set up (a bad value stops it there)
        self.on_cluster = []  # the Dask workers that ran compiles
        self.trace_path = ""
        self.trace_events = []
        atexit.register(_no_collection_at_exit)  # registered before the session's report, so it runs after it
        atexit.register(self._at_exit)

    def start(self):
        """The build tool is set up in an environment: workers, and this process's own runs of MLIR's tools (its
        batches of translations, lowerings), come from a running compile server of this installation when there
        is one (MLIRGPU_SERVER=off: never), else are this process's own. Raises CompileError for a bad
        MLIRGPU_STATS or MLIRGPU_SERVER*, which the tool stops on."""
        from . import served_tools

        self.stats = environment.value("MLIRGPU_STATS")
        _POOL.from_server = True
        served_tools.supply_from_running_server()

    def expect(self, source, remote_cache=False, tools=()):
        """The build is about to compile `source` (it looks out of date). `remote_cache`: its compiles use one, so
        they are expected cached: no translation runs before a compile asks (looking them up ahead would load the
        Redis client into the build tool's process and fetch what no compile asks for), and no worker loads
        LLVM before its compile needs it. Otherwise the workers started now load it at once, and start the fork
        servers of `tools` (the names of the tools its compile runs: pipeline.scan.tools_run) and of every
        source's expected before (worker.warm); those started before get the ones new to them. A build's first
        runs of llvm-mc, ld.lld or llc then find them loaded: started at the first run, each waited 50-200 ms
        for its tool to load while the other compiles and the build's own start took the CPUs."""
        self.expected += 1
        new = () if remote_cache else tuple(name for name in tools if name not in self.warm_tools)
        self.warm_tools += new
        if new and self.expected > 1:  # the first source's go to the workers it starts
            _POOL.warm_started(new)
        jobs = self.jobs()
        if self.expected <= jobs:
            _POOL.forking = jobs > 1
            _POOL.prestart(self.expected, None if remote_cache else self.warm_tools)
        if self.batches is None:
            from .batch import Batches  # only for builds with something to compile

            self.batches = Batches(jobs, early=not remote_cache)  # the first expected source's setting decides
        self.batches.add(os.path.abspath(source))

    def compile(self, source, output, options, environment=None, executor="", trace=""):
        """Compile `source` to `output` (a pipeline.CompileResult or dask.RemoteResult; raises CompileError), on
        the Dask cluster `executor` (a `cluster` URL) when set. `trace`: the file the build's trace goes to."""
        _POOL.forking = self.jobs() > 1
        result = _on_cluster(executor, source, output, options, self.tell) if executor else None
        if result is None:
            batches, path = self.batches, os.path.abspath(source)
            translator = Translated(lambda: batches.pretranslated(path)) if batches else OWN
            result = compile_to_object(source, output, options, environment, translator)
        self.stages.append(result.stages)
        if trace:
            self.trace_path = trace
            self.trace_events += result.trace
        if getattr(result, "worker", ""):
            self.on_cluster.append(result.worker)
        return result

    def done(self, source):
        """The compile of `source` ended, or failed before it began: it needs no translation run."""
        if self.batches is not None:
            self.batches.done(os.path.abspath(source))

    def _at_exit(self):
        if self.trace_path and self.trace_events:  # one trace for the whole build, whatever compiled
            from ..util.trace import write_trace
            from ..errors import CompileError

            try:
                write_trace(self.trace_path, self.trace_events)
            except CompileError as exc:  # the build is over: say so, as the build tool says other failures
                self.tell(str(exc))
        if self.stages and self.stats:
            from ..cache.stagecache import summary

            remote = f", {len(self.on_cluster)} on the Dask cluster" if self.on_cluster else ""
            self.tell(f"{len(self.stages)} compiles{remote}; {summary(self.stages)}")


def _no_collection_at_exit():
    """A build tool's nodes, environments and executors live until it ends, and the interpreter's collections at
    exit walk every one of them to free nothing that the process's end would not: 50 ms of a 40-object SCons
    build (12 ms per collection of its 55,000 objects). Frozen, they are skipped. Objects in reference cycles
    then go without their finalizers at exit, which Python does not promise to run anyway; everything else is
    torn down as before."""
    import gc

    gc.freeze()


def serve_commands(log_folder):
    """This process runs commands one after another (a compile server's runner, forked from the booted server):
    its workers are forked from it, keep their LLVM logs in `log_folder` (the server's own folder: they outlive
    the commands whose temporary folders they serve), and the first is forked now, from this clean state, not
    in a client's command."""
    _POOL.here = True
    _POOL.log_folder = log_folder
    with _POOL.lease():
        pass
    _POOL.end_command()  # a scratch folder is made per command, in the command's temporary folder


def command_starts():
    """A runner's command starts: see Pool.new_command."""
    _POOL.new_command()


def command_ended():
    """A runner's command ended: see Pool.end_command."""
    _POOL.end_command()


def shutdown(wait=True):
    """End this process's workers now (a runner that retires: their logs and scratch folders go with them)."""
    _POOL.shutdown(wait)
