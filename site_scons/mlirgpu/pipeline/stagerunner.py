"""Running one job's stages: the stage table (mlirgpu.pipeline.stages) from the module's LLVM IR to its binaries.

Each stage's output is the next one's input. A stage's output comes one of three ways: it ran; the stage cache
held it (mlirgpu.cache.stagecache: keyed by the input's hash and the stage's context, so the next stage's key is
known without running anything: early cutoff); or it is a hand-edited substitute (mlirgpu.pipeline.substitute).
Whichever way, `_stage_output` records it the same: its origin, the dump folder's callback, the job's ISA or
binaries, its trace event. `replay_job` gives a job's outputs from a whole compile's cache entry, recorded the
same way, as cached.
"""
import dataclasses
import hashlib
import shutil
import tempfile
import time
from dataclasses import dataclass

from . import stages, substitute
from ..cache import remote as remotecache, stagecache
from ..errors import CompileError
from ..llvm import arena as llvm_arena
from ..util import trace


class Compile:
    """What the stages of one compile share: the options, a scratch folder, the stage cache, the libraries they
    linked, their times, where each job's stage outputs came from, and the callbacks."""

    def __init__(self, source, options, report, on_stage):
        self.source = source
        self.options = options
        self._scratch = None
        self.report = report
        self.on_stage = on_stage
        self.cache = stagecache.open_cache()
        self.dependencies = []
        self.timings = {}
        self.origins = {}  # job id -> {stage: "ran" | "cached" | "substituted"}
        self.substitutes = substitute.available(options.substitute)  # file name -> path
        self.substituted = {}  # job id -> {stage: the substitute's path}
        self.trace = []  # Chrome trace events of the stages (mlirgpu.util.trace)
        self.payloads = {}  # job id -> {stage: its output as the stage cache stores it} (for the compile entry)
        self.cache_warnings = []  # the remote cache's faults seen by forked stage runners (mlirgpu.pipeline.fanout)
        self.llvm_modules = 0  # the most LLVM modules the stages held at once, in all processes (at most)
        self.spool = None  # where forked runners spool the embedded bytes, or None (mlirgpu.pipeline.spool)
        self.spooled = {}  # job id -> spool.Spooled: where a runner spooled that job's embedded bytes
        self._before_share = None  # in a forked runner: what the compile's process had added (see begin_share)

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
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started

    # What running jobs adds to a compile, which a forked stage runner sends back (mlirgpu.pipeline.fanout).
    _SHARE = {"dependencies": list, "timings": dict, "origins": dict, "substituted": dict, "trace": list,
              "payloads": dict, "cache_warnings": list, "spooled": dict}

    def begin_share(self):
        """In a forked stage runner: forget what the jobs before it added, and use a stage cache of its own
        (its counts are its own; the remote tier's client reconnects after a fork). What they added stays
        referenced, never freed here: freeing the compile's trace events and origins in a runner would write
        to every page they lie on, copying pages it shares with the compile's process (at 10,000 modules 26 MB
        per runner; issue 40)."""
        self._before_share = {name: getattr(self, name) for name in self._SHARE}
        for name, kind in self._SHARE.items():
            setattr(self, name, kind())
        self.cache = stagecache.open_cache()

    def share(self):
        """What this runner's jobs added (after `begin_share`), for `add_share` in the compile's process; its
        stage cache's counts are flushed."""
        if self.cache:
            self.cache.flush()
        self.cache_warnings += remotecache.take_warnings()
        return {name: getattr(self, name) for name in self._SHARE}

    def add_share(self, share):
        """Add a runner's `share`, as if its jobs had run here, in their order."""
        for name, value in share.items():
            mine = getattr(self, name)
            if name == "timings":
                for stage, seconds in value.items():
                    mine[stage] = mine.get(stage, 0.0) + seconds
            elif isinstance(mine, list):
                mine += value
            else:
                mine.update(value)


@dataclass
class JobOutput:
    assembly: stages.Assembly
    binaries: dict  # binary suffix -> bytes (empty for format isa)


def _stage_output(compile_, result, job, stage, origin, output, payload, started, substitute_path=None):
    """A stage's output, however it came (`origin`: ran, cached or substituted, from `substitute_path`): noted
    as such, handed to the dump folder, kept in the job's `result` (the ISA, the binaries) and traced (`started`:
    the stage's wall-clock and performance-counter start; `payload`: its output as the cache stores it)."""
    compile_.origins.setdefault(job.id, {})[stage.suffix] = origin
    if substitute_path:
        compile_.substituted.setdefault(job.id, {})[stage.suffix] = substitute_path
    if stage.dumped:
        compile_.on_stage(job, stage.suffix, output)
    if stage.suffix == "isa":
        result.assembly = output
    elif stage.suffix == stages.BINARY:
        result.binaries = output
    elif stage is stages.BITCODE:
        result.binaries = {stage.suffix: output}
    compile_.trace.append(trace.stage_event(job, stage.suffix, origin, *started,
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
                           fix=job.target.failure_fix(str(exc))) from exc
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
    """Run the stage table for one job (see _run_stages). The LLVM objects its stages make belong to the job's
    arena, which closes them when the job ends, also on error (mlirgpu.llvm.arena): the job's output holds text
    and bytes only, never a module that the garbage collector would free in its own order."""
    with llvm_arena.Arena():
        result = _run_stages(compile_, job, llvm_ir)
    assembly = result.assembly and dataclasses.replace(result.assembly, module=None)  # a library has none
    return JobOutput(assembly, result.binaries)


def _run_stages(compile_, job, llvm_ir):
    """Run the stage table for one job: each stage's output is the next one's input.

    With the stage cache, a stage whose key (its input's hash and its context) is stored is not run: its output
    comes from the cache, and so the next stage's key is known without running anything (early cutoff). A stage
    that must run after cached ones gets its input by running the stages before it again, from the translation
    or the last substitute (the stages hand each other LLVM modules, which the cache does not hold). A
    substituted stage is never cached; the stages after it are keyed by the substitute's bytes."""
    llvm_ir = stages.amend_translation(job, llvm_ir)
    chain = stages.for_format(compile_.options.format, compile_.options.emit)
    cache = compile_.cache
    compile_.origins.setdefault(job.id, {})
    result = JobOutput(None, {})
    digest = hashlib.sha256(llvm_ir.encode("utf-8")).hexdigest()
    live = llvm_ir  # the in-memory input of the next stage; None when the previous stage came from the cache
    kernels = substitute.kernel_names(job, llvm_ir) if compile_.substitutes else []
    loaders = {stage.suffix: _substitute_loader(compile_, job, stage, kernels) for stage in chain} \
        if compile_.substitutes else {}
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
            live, origin = None, "cached"
        else:
            if live is None:  # recompute this stage's input, from the translation or the last substitute
                start = max((i for i, earlier in enumerate(chain[:index]) if loaders.get(earlier.suffix)), default=-1)
                live = loaders[chain[start].suffix][1]() if start >= 0 else llvm_ir
                for earlier in chain[start + 1:index]:
                    live = _run_stage(compile_, job, earlier, live)
            output = live = _run_stage(compile_, job, stage, live)
            origin = "ran"
            if cache:
                payload = stage.save(output)
                cache.put(key, payload)
        if found:  # the binary stage: its embedded binary replaced
            output = live = found[1](output)
            origin = "substituted"
        if cache:
            digest = hashlib.sha256(payload).hexdigest()
            compile_.payloads.setdefault(job.id, {})[stage.suffix] = payload
        _stage_output(compile_, result, job, stage, origin, output, payload, started, found and found[0])
    return result


def replay_job(compile_, job, payloads):
    """A job's output from a compile entry ({stage: payload}), as `run_job` gives it, each stage's output
    recorded as cached."""
    result = JobOutput(None, {})
    compile_.origins.setdefault(job.id, {})
    for stage in stages.for_format(compile_.options.format, compile_.options.emit):
        started = time.time(), time.perf_counter()
        output = stage.restore(payloads[stage.suffix])
        _stage_output(compile_, result, job, stage, "cached", output, payloads[stage.suffix], started)
    return result
