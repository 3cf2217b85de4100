"""The staged compiler: one pipeline for every target, in upstream `gpu-module-to-binary` order.

`STAGES` is the single ordered table of stages. Each stage is named after the dump file it produces; the same
table drives the pipeline, the dump names (`planned_dumps`, which the SCons emitter and `list-outputs` use), the
docs and the tests. Per (gpu.module, target) job:

    initial.ll  translate (mlir-translate), set triple + data layout from the target machine
    linked.ll   target pre-link hook, then link the target's libraries only-needed and internalize
    opt.ll      LLVM's default pipeline at the target's O level
    isa         PTX / AMDGCN assembly
    <binary>    the target's serializer: cubin (+ fatbin) / hsaco; skipped for format=isa

then every job's binary (or ISA text plus a NUL, for format=isa) is embedded in one host object.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from . import source as sources
from . import toolchain, workers
from .errors import CompileError
from .fsutil import write_atomic
from .naming import job_names
from .options import FORMATS


@dataclass
class Job:
    """One (gpu.module, target) compilation."""

    id: str
    source: str
    module: sources.GpuModule
    attr: sources.TargetAttr
    stem: str  # dump file stem
    symbol: str  # C name prefix: the object defines `<symbol>_binary`, `<symbol>_binary_size`

    @property
    def target(self):
        return self.attr.target

    @property
    def chip(self):
        return self.attr.chip

    @property
    def opt_level(self):
        return self.attr.opt_level

    def where(self, stage):
        return f"module @{self.module.name} ({self.target.name} {self.chip}), stage {stage}"


@dataclass
class CompileResult:
    object_bytes: bytes
    jobs: list
    dumps: list  # paths written under the dump folder
    timings: dict = field(default_factory=dict)  # stage -> seconds, summed over jobs


class _Context:
    """What the stages of one compile share: options, the worker, the dump folder, timings."""

    def __init__(self, options, worker, scratch):
        self.options = options
        self.worker = worker
        self.scratch = scratch
        self.dumps = []
        self.timings = {}
        self.job = None
        self.stage = None

    # The LLVM primitives target hooks may call, bound to the current job and stage for error messages.
    def undefined_functions(self, job):
        return self.worker.call("undefined_functions", job.id, what=job.where(self.stage))

    def add_control_constants(self, job, constants, flags):
        return self.worker.call("add_control_constants", job.id, constants, flags, what=job.where(self.stage))


def _stage_initial(ctx, job, llvm_ir):
    attr = job.attr
    return ctx.worker.call(
        "start", job.id, llvm_ir, attr.triple, attr.chip, attr.features, attr.opt_level, what=job.where("initial.ll")
    )


def _stage_linked(ctx, job, _):
    libraries = job.target.libraries(job, ctx, ctx.options)
    for library in libraries:
        if not os.path.isfile(library.path):
            raise CompileError(f"bitcode library '{library.path}' does not exist", file=job.source,
                               line=job.module.line, fix="fix the -l / link=[...] path")
    return ctx.worker.call("link", job.id, [lib.as_args() for lib in libraries], what=job.where("linked.ll"))


def _stage_opt(ctx, job, _):
    return ctx.worker.call("optimize", job.id, job.opt_level, what=job.where("opt.ll"))


def _stage_isa(ctx, job, _):
    return ctx.worker.call("emit_isa", job.id, what=job.where("isa"))


def _stage_binary(ctx, job, isa):
    return job.target.serialize(job, isa, ctx.options.format, ctx.options, ctx.scratch)


# The ordered stage table: (dump suffix, function). The binary stage's suffixes come from the target.
STAGES = (
    ("initial.ll", _stage_initial),
    ("linked.ll", _stage_linked),
    ("opt.ll", _stage_opt),
    ("isa", _stage_isa),
    ("binary", _stage_binary),
)


def stage_suffixes(target, fmt):
    """The dump suffixes one job writes, in stage order."""
    suffixes = [suffix for suffix, _ in STAGES if suffix != "binary"]
    if fmt != "isa":
        suffixes += list(target.binary_suffixes(fmt))
    return suffixes


def plan(modules, source, options):
    """The jobs for `modules`: names, chip and O-level checks, and name collisions, before any work."""
    if options.format not in FORMATS:
        raise CompileError(f"unknown format '{options.format}'", fix=f"use one of {', '.join(FORMATS)}")
    if not modules:
        raise CompileError("no gpu.module found", file=source,
                           fix="add a gpu.module (this file has nothing to compile for the GPU)")
    jobs = []
    seen = {}
    for module in modules:
        if not module.targets:
            raise CompileError(f"gpu.module @{module.name} has no target", file=source, line=module.line,
                               fix="pass --target nvvm|rocdl (and --chip) or add a #nvvm.target / #rocdl.target")
        for attr, (stem, symbol) in zip(module.targets, job_names(module.name, module.targets)):
            if not 0 <= attr.opt_level <= 3:
                raise CompileError(f"invalid optimization level O = {attr.opt_level} in {attr.text}",
                                   file=source, line=module.line, fix="use O = 0, 1, 2 or 3")
            try:
                attr.target.check_chip(attr.chip)
            except CompileError as exc:
                raise exc.located(source, module.line)
            if stem in seen or symbol in seen:
                other = seen.get(stem) or seen.get(symbol)
                raise CompileError(
                    f"gpu.module @{module.name} and @{other} map to the same file or symbol name '{stem}'",
                    file=source, line=module.line, fix="rename one of the modules",
                )
            seen[stem] = seen[symbol] = module.name
            jobs.append(Job(f"{len(jobs)}", source, module, attr, stem, symbol))
    return jobs


def planned_dumps(jobs, options):
    """Every dump file a compile of `jobs` writes (relative to the dump folder), in stage order."""
    return [f"{job.stem}.{suffix}" for job in jobs for suffix in stage_suffixes(job.target, options.format)]


def translate(modules, source):
    """LLVM IR text for each module, from one mlir-translate process (pieces split by `// -----`)."""
    joined = "\n// -----\n".join(module.text for module in modules)
    tool = toolchain.llvm_tool("mlir-translate")
    argv = [tool, "--no-implicit-module", "--split-input-file", "--mlir-to-llvmir", "--preserve-ll-uselistorder", "-"]
    result = subprocess.run(argv, input=joined.encode("utf-8"), capture_output=True, timeout=600)
    if result.returncode != 0:
        raise sources.mlir_diagnostic(result.stderr.decode("utf-8", "replace"), source, "translating to LLVM IR")
    text = result.stdout.decode("utf-8")
    pieces = re.split(r"^(?=; ModuleID = )", text, flags=re.M)
    pieces = [piece for piece in pieces if piece.startswith("; ModuleID = ")]
    if len(pieces) != len(modules):
        raise CompileError(f"mlir-translate returned {len(pieces)} modules for {len(modules)}", file=source)
    return dict(zip((module.name for module in modules), pieces))


def _dump(ctx, job, suffix, data):
    if ctx.options.dump_dir:
        path = os.path.join(ctx.options.dump_dir, f"{job.stem}.{suffix}")
        write_atomic(path, data)
        ctx.dumps.append(path)


def run_job(ctx, job, llvm_ir):
    """Run every stage of one job; returns the bytes to embed."""
    artifact = llvm_ir
    ctx.job = job
    try:
        for suffix, stage in STAGES:
            if suffix == "binary" and ctx.options.format == "isa":
                break
            ctx.stage = suffix
            started = time.perf_counter()
            try:
                artifact = stage(ctx, job, artifact)
            except CompileError as exc:
                raise exc.located(job.source, job.module.line)
            ctx.timings[suffix] = ctx.timings.get(suffix, 0.0) + time.perf_counter() - started
            if suffix == "binary":
                for binary_suffix, data in artifact.items():
                    _dump(ctx, job, binary_suffix, data)
                artifact = artifact[job.target.binary_suffixes(ctx.options.format)[-1]]
            else:
                _dump(ctx, job, suffix, artifact)
    except workers.WorkerCrashed:
        raise
    except CompileError:
        if ctx.worker.alive:
            ctx.worker.call("drop", job.id)
        raise
    if ctx.options.format == "isa":
        return artifact.encode("utf-8") + b"\0"
    return artifact


def _prepare_dump_dir(path, source):
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-")
        probe.close()
    except OSError as exc:
        raise CompileError(f"cannot write the dump folder '{path}': {exc.strerror}", file=source,
                           fix="choose a writable --dump-intermediates folder") from exc


def compile_file(source, options):
    """Compile every gpu.module of `source`; returns the host object bytes and what was written."""
    timings = {}
    started = time.perf_counter()
    modules = sources.load(source, options)
    jobs = plan(modules, source, options)
    timings["split"] = time.perf_counter() - started
    if options.dump_dir:
        _prepare_dump_dir(options.dump_dir, source)
    started = time.perf_counter()
    llvm_irs = translate(modules, source)
    timings["translate"] = time.perf_counter() - started
    scratch = tempfile.mkdtemp(prefix="mlirgpu-")
    try:
        with workers.lease() as worker:
            ctx = _Context(options, worker, scratch)
            symbols = [(f"{job.symbol}_binary", run_job(ctx, job, llvm_irs[job.module.name])) for job in jobs]
            started = time.perf_counter()
            obj = worker.call("host_object", symbols, options.section, what=f"{source}: host object")
            timings.update(ctx.timings)
            timings["embed"] = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return CompileResult(obj, jobs, ctx.dumps, timings)


def compile_to_object(source, output, options):
    """Compile `source` and write the host object to `output` atomically."""
    result = compile_file(source, options)
    write_atomic(output, result.object_bytes)
    return result
