"""Running one job's stages: the stage table (mlirgpu.pipeline.stages) from the module's LLVM IR to its binaries.

Each stage's output is the next one's input. A stage's output comes one of three ways: it ran; the stage cache
held it (mlirgpu.cache.stagecache: keyed by the input's hash and the stage's context, so the next stage's key is
known without running anything: early cutoff); or it is a hand-edited substitute (mlirgpu.pipeline.substitute).
Whichever way, `_stage_output` records it the same: its origin, the dump folder's callback, the job's ISA or
binaries, its trace event. `replay_job` gives a job's outputs from a whole compile's cache entry, recorded the
same way, as cached.

A job's run gives a value, its `JobResult` (its outputs, and what it adds to the compile: origins, substitutes,
cache payloads, trace events, stage times, linked libraries, warnings), which the driver folds into the
`Compile` in job order (`Compile.fold`, mlirgpu.pipeline.jobrunner): whether a job ran here or in a forked
runner, the compile sees the same. While a job runs, its stages note these in its log (`Compile.job`).
"""
import dataclasses
import hashlib
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from . import stages, substitute
from ..cache import stagecache
from ..errors import CompileError
from ..llvm import arena as llvm_arena, isolation
from ..util import trace


class Compile:
    """What the stages of one compile share: the options, a scratch folder, the stage cache, the runner of its
    jobs (mlirgpu.pipeline.jobrunner) and the callbacks; and what its jobs' results fold into, in job order (the
    libraries they linked, their times, where each job's stage outputs came from, their trace and cache
    payloads, and the compile's one warning sink)."""

    def __init__(self, source, options, report, on_stage, runner):
        self.source = source
        self.options = options
        self._scratch = None
        self.report = report
        self.on_stage = on_stage
        self.runner = runner
        self.warnings = []  # the one sink of warnings said, never failing the build: the remote cache's faults
        self.job = None  # the running job's _JobLog, while `run_job` runs one here
        self.cache = stagecache.open_cache(self.warn)
        self.llvm_builds = None  # the LLVM builds' identities every stage's key names (stages.machine_context)
        self.dependencies = []
        self.timings = {}
        self.origins = {}  # job id -> {stage: "ran" | "cached" | "substituted"}, one dict per distinct pattern
        self._patterns = {}  # the origins' items -> the one dict of them that `origins` holds
        self.substitutes = substitute.available(options.substitute)  # file name -> path
        self.substituted = {}  # job id -> {stage: the substitute's path}
        self.trace = trace.Events()  # Chrome trace events of the stages, held in columns (mlirgpu.util.trace)
        self.payloads = {}  # job id -> {stage: its output as the stage cache stores it} (for the compile entry)
        self.llvm_modules = 0  # the most LLVM modules the stages held at once, in all processes (at most)
        self.spool = None  # where forked runners spool the embedded bytes, or None (mlirgpu.pipeline.spool)
        self.spooled = {}  # job id -> spool.Spooled: where a runner spooled that job's embedded bytes

    @property
    def scratch(self):
        """This compile's temporary folder, made when a stage first needs one (a cached compile never does)."""
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="mlirgpu-")
        return self._scratch

    def remove_scratch(self):
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def timed(self, name, started):
        """Add the seconds since `started` to step `name`: the running job's, else the compile's own."""
        timings = self.job.timings if self.job is not None else self.timings
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - started

    def warn(self, warning):
        """The compile's one warning sink: into the running job's result (which carries it back from whichever
        process ran the job), else the compile's own list."""
        (self.job.warnings if self.job is not None else self.warnings).append(warning)

    def linked(self, paths):
        """The libraries a job's link stage read (the depfile's inputs)."""
        self.job.dependencies.extend(paths)

    def fold(self, job, result):
        """Add a job's JobResult, in job order: as if its stages had run here. Jobs whose stages came the same
        way share one origins dict (read, never changed): 10,000 jobs that all ran hold a few, not 10,000 dicts
        (2 MB in the compile's process, and in the result its caller unpickles: issue 40)."""
        items = tuple(result.origins.items())
        self.origins[job.id] = self._patterns.setdefault(items, dict(items))
        if result.substituted:
            self.substituted[job.id] = dict(result.substituted)
        if result.payloads:
            self.payloads[job.id] = dict(result.payloads)
        self.trace.extend(result.trace)
        for stage, seconds in result.timings.items():
            self.timings[stage] = self.timings.get(stage, 0.0) + seconds
        self.dependencies += result.dependencies
        self.warnings += result.warnings
        if result.spooled is not None:
            self.spooled[job.id] = result.spooled


@dataclass
class JobOutput:
    assembly: stages.Assembly
    binaries: dict  # binary suffix -> bytes (empty for format isa)


@dataclass(frozen=True)
class JobResult:
    """What running one job gives, a value whichever process ran it (mlirgpu.pipeline.jobrunner folds it)."""
    output: JobOutput
    origins: dict  # stage -> "ran" | "cached" | "substituted"
    substituted: dict  # stage -> the substitute's path
    payloads: dict  # stage -> its output as the stage cache stores it (with a stage cache)
    trace: tuple  # the Chrome trace events of its stages
    timings: dict  # stage -> seconds
    dependencies: tuple  # the libraries its link stage read
    warnings: tuple  # what the compile's warning sink got while it ran (the remote cache's faults)
    spooled: object = None  # spool.Spooled: where a forked runner spooled its embedded bytes (mlirgpu.pipeline.spool)


@dataclass
class _JobLog:
    """What a job's stages note while it runs, made a JobResult when it ends."""
    origins: dict = field(default_factory=dict)
    substituted: dict = field(default_factory=dict)
    payloads: dict = field(default_factory=dict)
    trace: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    dependencies: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    def result(self, output):
        return JobResult(output, self.origins, self.substituted, self.payloads, tuple(self.trace), self.timings,
                         tuple(self.dependencies), tuple(self.warnings))


def _stage_output(compile_, result, job, stage, origin, output, payload, started, substitute_path=None):
    """A stage's output, however it came (`origin`: ran, cached or substituted, from `substitute_path`): noted
    as such, handed to the dump folder, kept in the job's `result` (the ISA, the binaries) and traced (`started`:
    the stage's wall-clock and performance-counter start; `payload`: its output as the cache stores it)."""
    log = compile_.job
    log.origins[stage.suffix] = origin
    if substitute_path:
        log.substituted[stage.suffix] = substitute_path
    if stage.dumped:
        compile_.on_stage(job, stage.suffix, output)
    if stage.suffix == "isa":
        result.assembly = output
    elif stage.suffix == stages.BINARY:
        result.binaries = output
    elif stage is stages.BITCODE:
        result.binaries = {stage.suffix: output}
    log.trace.append(trace.stage_event(job, stage.suffix, origin, *started,
                                            output if stage.suffix == stages.BINARY else payload))


def _run_stage(compile_, job, stage, given):
    where = job.where(stage.suffix)
    compile_.report(where, (job.source, job.module.line))
    started = time.perf_counter()
    try:
        output = stage.run(compile_, job, given)
    except CompileError as exc:
        raise exc.located(job.source, job.module.line)
    except RuntimeError as exc:  # LLVM's diagnostics arrive as RuntimeErrors
        raise CompileError(f"{where}: {exc}", file=job.source, line=job.module.line,
                           fix=job.target.codegen.failure_fix(str(exc))) from exc
    compile_.timed(stage.suffix, started)
    return output


def _substitute_loader(compile_, job, stage, kernels):
    """(path, a function giving the substitute as the stage's output) for a stage of `job`, or None. For the
    binary stage: (path, a function of the stage's own output giving it with the embedded binary replaced)."""
    for name, suffix in substitute.names_for(job, stage.suffix, compile_.options):
        path = compile_.substitutes.get(name)
        if path is None:
            continue
        if stage.suffix == stages.BINARY:
            data = substitute.load_binary(job, path, suffix, kernels, compile_.options)
            return path, lambda output: {**output, suffix: data}
        load = substitute.load_isa if stage.suffix == "isa" else substitute.load_ir
        load(job, path, kernels)  # checked now, so a bad substitute fails before any stage runs
        return path, lambda: load(job, path, kernels)
    return None


def run_job(compile_, job, llvm_ir):
    """Run the stage table for one job (see _run_stages): its JobResult. The LLVM objects its stages make belong
    to the job's arena, which closes them when the job ends, also on error (mlirgpu.llvm.arena): the job's output
    holds text and bytes only, never a module that the garbage collector would free in its own order. Code
    generation that must run isolated runs where the compile's runner isolates work (mlirgpu.llvm.isolation)."""
    log = compile_.job = _JobLog()
    try:
        with llvm_arena.Arena(), isolation.isolating(compile_.runner.isolate):
            output = _run_stages(compile_, job, llvm_ir)
    finally:
        compile_.job = None
    assembly = output.assembly and dataclasses.replace(output.assembly, module=None)  # a library has none
    return log.result(JobOutput(assembly, output.binaries))


def _run_stages(compile_, job, llvm_ir):
    """Run the stage table for one job: each stage's output is the next one's input.

    With the stage cache, a stage whose key (its input's hash and its context) is stored is not run: its output
    comes from the cache, and so the next stage's key is known without running anything (early cutoff). A stage
    that must run after cached ones gets its input by running the stages before it again, from the translation
    or the last substitute (the stages hand each other LLVM modules, which the cache does not hold). A
    substituted stage is never cached; the stages after it are keyed by the substitute's bytes."""
    llvm_ir = stages.amend_translation(job, llvm_ir)
    chain = stages.for_target(job.target, compile_.options.format, compile_.options.emit)
    cache = compile_.cache
    result = JobOutput(None, {})
    digest = hashlib.sha256(llvm_ir.encode("utf-8")).hexdigest()
    live = llvm_ir  # the in-memory input of the next stage; None when the previous stage came from the cache
    kernels = substitute.kernel_names(job, llvm_ir) if compile_.substitutes else []
    loaders = {stage.suffix: _substitute_loader(compile_, job, stage, kernels) for stage in chain
               if stage.feeds_next} if compile_.substitutes else {}
    for index, stage in enumerate(chain):
        found = loaders.get(stage.suffix)
        started = time.time(), time.perf_counter()
        if found and stage.suffix != stages.BINARY:
            output = live = found[1]()
            payload = stage.save(output)
            digest = hashlib.sha256(payload).hexdigest()
            _stage_output(compile_, result, job, stage, "substituted", output, payload, started, found[0])
            continue
        key = stagecache.key(stage.suffix, digest, *stage.context(compile_, job)) if cache else None
        payload = cache.get(key) if cache else None
        output = stagecache.restored(stage.restore, payload)
        if output is None or stage.suffix == stages.BINARY and \
                set(output) != set(stages.binary_dumps(job.target, compile_.options.format)):
            payload = output = None  # an entry no stage wrote, or of another layout: never half the dumps
        if payload is not None:
            live, origin = live if not stage.feeds_next else None, "cached"
        else:
            if live is None:  # recompute this stage's input, from the translation or the last substitute
                start = max((i for i, earlier in enumerate(chain[:index]) if loaders.get(earlier.suffix)), default=-1)
                live = loaders[chain[start].suffix][1]() if start >= 0 else llvm_ir
                for earlier in chain[start + 1:index]:
                    if earlier.feeds_next:  # a stage that only writes its own dump is not needed for it
                        live = _run_stage(compile_, job, earlier, live)
            output = _run_stage(compile_, job, stage, live)
            live = output if stage.feeds_next else live
            origin = "ran"
            if cache:
                payload = stage.save(output)
                cache.put(key, payload)
        if found:  # the binary stage: its embedded binary replaced
            output = live = found[1](output)
            origin = "substituted"
        if cache:
            digest = hashlib.sha256(payload).hexdigest() if stage.feeds_next else digest
            compile_.job.payloads[stage.suffix] = payload
        _stage_output(compile_, result, job, stage, origin, output, payload, started, found and found[0])
    return result


def replay_job(compile_, job, payloads):
    """A job's JobResult from a compile entry ({stage: payload}), as `run_job` gives it, each stage's output
    recorded as cached."""
    output = JobOutput(None, {})
    log = compile_.job = _JobLog()
    try:
        for stage in stages.for_target(job.target, compile_.options.format, compile_.options.emit):
            started = time.time(), time.perf_counter()
            restored = stage.restore(payloads[stage.suffix])
            _stage_output(compile_, output, job, stage, "cached", restored, payloads[stage.suffix], started)
    finally:
        compile_.job = None
    return log.result(output)
