"""The compile driver: one pipeline for every target, in upstream `gpu-module-to-binary` order.

    read the source        cut its gpu.modules straight from the text (scan.direct_source), else mlir-opt
    plan                   jobs (module x target), names, checks, before any work (planning)
    translate              mlir-translate, one run for all modules
    per job, the stages    initial.ll -> linked.ll -> opt.ll -> isa -> binary (mlirgpu.pipeline.stages; targets' hooks)
    embed                  the binaries in one host object (with host code: MLIR's launch glue), the C header

Everything here runs in the process that calls it, which must be one where LLVM may run (a worker: see
mlirgpu.frontends.api and mlirgpu.execution.workers). Progress and stage outputs leave through callbacks: `report(what, where)`
before each step (a worker passes it to its caller, which names the step if LLVM aborts), and the dump folder's
`stage_output` (mlirgpu.pipeline.dumps), so no stage knows whether anything is dumped or watched.
"""
import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field

from . import compileentry, embed, repro, stages, substitute
from ..llvm import arena as llvm_arena, process, toolchain
from ..cache import remote as remotecache, stagecache
from . import lowering
from ..util import trace
from . import source as sources
from .dumps import DumpFolder
from .embed import Embedded
from ..errors import CompileError, CompileWarning
from ..util.fsutil import remove_stale_temps, write_atomic, write_if_changed
from ..util.mlirtext import SYMBOL, hex_escaped
from ..llvm.mlirtools import run_mlir_tool
from ..util.naming import c_name
from ..compile_options import hint
from .record import make_depfile, new_record
from .planning import (HOST_DUMP, REPRO_DUMP, check_options, check_output_roles, container_dump, fat_container, plan,
                       planned_dumps)
from .scan import direct_source
from .translation import OWN


@dataclass
class CompileResult:
    object_bytes: bytes
    jobs: list
    dumps: list  # paths written under the dump folder
    timings: dict = field(default_factory=dict)  # stage -> seconds, summed over jobs
    dependencies: list = field(default_factory=list)  # the source, linked libraries and tools used
    tools: dict = field(default_factory=dict)  # tool name -> [runs, seconds, path]
    binaries: list = field(default_factory=list)  # embed.Embedded, as placed in the object
    header: str = ""  # the C header text for the object
    warnings: list = field(default_factory=list)
    stages: dict = field(default_factory=dict)  # job id -> {stage: "ran" | "cached"} (the stage cache)
    cache_warnings: list = field(default_factory=list)  # the remote cache's faults: said, never the build's failure
    trace: list = field(default_factory=list)  # Chrome trace events: the compile and each stage of each job


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


@dataclass
class JobOutput:
    assembly: stages.Assembly
    binaries: dict  # binary suffix -> bytes (empty for format isa)


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
    return JobOutput(dataclasses.replace(result.assembly, module=None), result.binaries)


def _run_stages(compile_, job, llvm_ir):
    """Run the stage table for one job: each stage's output is the next one's input.

    With the stage cache, a stage whose key (its input's hash and its context) is stored is not run: its output
    comes from the cache, and so the next stage's key is known without running anything (early cutoff). A stage
    that must run after cached ones gets its input by running the stages before it again, from the translation
    or the last substitute (the stages hand each other LLVM modules, which the cache does not hold). A
    substituted stage is never cached; the stages after it are keyed by the substitute's bytes."""
    llvm_ir = stages.amend_translation(job, llvm_ir)
    chain = stages.for_format(compile_.options.format)
    cache = compile_.cache
    origin = compile_.origins.setdefault(job.id, {})
    result = JobOutput(None, {})
    digest = hashlib.sha256(llvm_ir.encode("utf-8")).hexdigest()
    live = llvm_ir  # the in-memory input of the next stage; None when the previous stage came from the cache
    kernels = substitute.kernel_names(job, llvm_ir) if compile_.substitutes else []
    loaders = {stage.suffix: _substitute_loader(compile_, job, stage, kernels) for stage in chain} \
        if compile_.substitutes else {}
    for index, stage in enumerate(chain):
        found = loaders.get(stage.suffix)
        wall, begun = time.time(), time.perf_counter()
        if found and stage.suffix != stages.BINARY:
            output = live = found[1]()
            origin[stage.suffix] = "substituted"
            compile_.substituted.setdefault(job.id, {})[stage.suffix] = found[0]
            payload = stage.save(output)
            digest = hashlib.sha256(payload).hexdigest()
            compile_.on_stage(job, stage.suffix, output)
            if stage.suffix == "isa":
                result.assembly = output
            compile_.trace.append(trace.stage_event(job, stage.suffix, origin[stage.suffix], wall, begun, payload))
            continue
        key = stagecache.key(stage.suffix, digest, *stage.context(compile_, job)) if cache else None
        payload = cache.get(key) if cache else None
        output = stagecache.restored(stage.restore, payload)
        if output is None or stage.suffix == stages.BINARY and \
                set(output) != set(stages.binary_dumps(job.target, compile_.options.format)):
            payload = output = None  # an entry no stage wrote, or of another layout: never half the dumps
        if payload is not None:
            live = None
            origin[stage.suffix] = "cached"
        else:
            if live is None:  # recompute this stage's input, from the translation or the last substitute
                start = max((i for i, earlier in enumerate(chain[:index]) if loaders.get(earlier.suffix)), default=-1)
                live = loaders[chain[start].suffix][1]() if start >= 0 else llvm_ir
                for earlier in chain[start + 1:index]:
                    live = _run_stage(compile_, job, earlier, live)
            output = live = _run_stage(compile_, job, stage, live)
            origin[stage.suffix] = "ran"
            if cache:
                payload = stage.save(output)
                cache.put(key, payload)
        if found:  # the binary stage: its embedded binary replaced
            output = live = found[1](output)
            origin[stage.suffix] = "substituted"
            compile_.substituted.setdefault(job.id, {})[stage.suffix] = found[0]
        if cache:
            digest = hashlib.sha256(payload).hexdigest()
            compile_.payloads.setdefault(job.id, {})[stage.suffix] = payload
        compile_.on_stage(job, stage.suffix, output)
        if stage.suffix == "isa":
            result.assembly = output
        elif stage.suffix == stages.BINARY:
            result.binaries = output
        compile_.trace.append(trace.stage_event(job, stage.suffix, origin[stage.suffix], wall, begun,
                                                output if stage.suffix == stages.BINARY else payload))
    return result


def _job_bytes(job, output, fmt):
    """What upstream embeds for one job: the target's assembly object plus the NUL SelectObject adds, or the
    target's binary for the format."""
    if fmt == "isa":
        return job.target.assembly_object(output.assembly.text) + b"\0"
    return output.binaries[job.target.binary_suffixes(fmt)[-1]]


def _embeddings(compile_, source, jobs, outputs, dumps):
    """The binaries of the host object: per module one fat container when its target makes one for its chips
    (or the layout needs one), else one per (module, target)."""
    options = compile_.options
    embedded = []
    for module in source.modules:
        mjobs = [job for job in jobs if job.module is module]
        container = fat_container([job.attr for job in mjobs], options, source.has_host_code)
        if container:
            target = mjobs[0].target
            started = time.perf_counter()
            data = target.combine(mjobs, [outputs[job.id].binaries for job in mjobs],
                                  [outputs[job.id].assembly for job in mjobs], options, compile_.scratch)
            compile_.timed("combine", started)
            if dumps:
                dumps.write(container_dump(module.name, container), data)
            embedded.append(Embedded(options.symbol_prefix + c_name(module.name), module.name, target,
                                     tuple(job.chip for job in mjobs), target.embeds_fat_as, data))
            continue
        if source.has_host_code:  # as upstream's #gpu.select_object: one target's object per module
            index = _selected_index(module)
            mjobs = [mjobs[min(index, len(mjobs) - 1)]]
        for job in mjobs:
            name = options.symbol_prefix + (c_name(module.name) if source.has_host_code else job.symbol)
            embedded.append(Embedded(name, module.name, job.target, (job.chip,),
                                     job.target.embedded_format(options.format),
                                     _job_bytes(job, outputs[job.id], options.format)))
    return embedded


def _selected_index(module):
    match = re.search(r"select_object<(\d+)", module.handler)
    return int(match.group(1)) if match else 0


def _gpu_binary(module, jobs, outputs, options):
    """`gpu.binary @m [#gpu.object<...>, ...]` carrying our bytes, for translating host code as upstream."""
    kind = {"isa": "assembly = ", "bin": "bin = ", "fatbin": ""}[options.format]
    objects = []
    for job in jobs:
        entries = dict(job.target.object_properties(job, options.format))
        if options.section:  # upstream 22.1.8 records it for one target only; we honour it for every target
            entries["section"] = f'"{options.section}"'
        properties = ("properties = {" + ", ".join(f"{k} = {v}" for k, v in sorted(entries.items())) + "}, "
                      if entries else "")
        data = _job_bytes(job, outputs[job.id], options.format)
        if options.format == "isa":
            data = data[:-1]  # the object as the serializer made it; the host translation adds the NUL
        objects.append(f"#gpu.object<{job.attr.text}, {properties}{kind}\"{hex_escaped(data)}\">")
    symbol = SYMBOL.search(module.text, module.text.index("gpu.module")).group(1)
    handler = f" {module.handler}" if module.handler else ""
    return f"  gpu.binary @{symbol}{handler} [{', '.join(objects)}]\n"


def translate_host(source, jobs, outputs, options):
    """Host LLVM IR: each gpu.module replaced by a gpu.binary with our objects, translated by mlir-translate."""
    pieces = {module.name: _gpu_binary(module, [j for j in jobs if j.module is module], outputs, options)
              for module in source.modules}
    container = sources.replace_modules(source.container, pieces)
    if source.host_passes:  # the rest of the user's pipeline, as upstream runs it after serializing
        container = run_mlir_tool("mlir-opt", ["-", f"--pass-pipeline={source.host_passes}",
                                               "--mlir-print-local-scope", "--mlir-print-debuginfo"], source.path,
                                  "lowering host code (--lowering, after gpu-module-to-binary)", text=container)
        sources.check_host(container, source.path, lowering.canonical(options.lowering), serialized=True)
    return run_mlir_tool("mlir-translate", ["--mlir-to-llvmir", "-"], source.path, "translating host code",
                         text=container, fix=f"set {hint('host_code', 'ignore')} to embed only the binaries")


def _own_target_warnings(modules, options, source):
    """Modules that keep their own target(s) although the build names another target (which applies only to
    modules without one): the same on every path (direct cut or mlir-opt)."""
    if not options.target:
        return []
    return [CompileWarning(f"gpu.module @{module.name} carries its own target(s); target {options.target} "
                           "applies only to modules without one", file=source, line=module.line)
            for module in modules if module.targets and all(t.target.name != options.target for t in module.targets)]


def _check_layout(source, jobs, options):
    """The vendor layout: fat binaries only, no host code, targets that have vendor sections; a section of
    one's own hides the code from the vendor's tools (a warning)."""
    if options.layout != "vendor":
        return []
    if options.format != "fatbin":
        raise CompileError(f"the vendor layout embeds fat binaries, not format '{options.format}'", file=source.path,
                           fix=f"use {hint('format', 'fatbin')} with {hint('layout', 'vendor')}")
    if source.has_host_code:
        raise CompileError("the vendor layout is for objects without host code (MLIR's launch glue loads its own "
                           "binaries)", file=source.path, fix=f"use {hint('layout', 'plain')} for this file")
    plain = sorted({job.target.name for job in jobs if job.target.vendor_section is None})
    if plain:
        raise CompileError(f"target {plain[0]} has no vendor layout", file=source.path,
                           fix=f"use {hint('layout', 'plain')}")
    if options.section:
        vendors = sorted({job.target.vendor_section for job in jobs}, key=lambda vendor: vendor.section)
        return [CompileWarning(f"section '{options.section}' overrides the vendor sections: "
                               f"{' and '.join(v.readers for v in vendors)} look only in "
                               f"{' / '.join(v.section for v in vendors)} and will not find this code",
                               file=source.path)]
    return []


def _no_report(what, where):
    """The default progress callback: nobody is told."""


def compile_source(source, options, output=None, translator=None, report=None):
    """Compile every gpu.module of `source` in this process; the CompileResult (with tool statistics).

    `output`: the object's path, when one is written (checked against the other outputs before any work).
    `translator`: where the modules' LLVM IR comes from (mlirgpu.pipeline.translation; default: mlir-translate)."""
    token = process.tool_stats.set({})
    try:
        result = _compile(source, options, output, translator or OWN, report or _no_report)
        result.tools = process.tool_stats.get()
    finally:
        process.tool_stats.reset(token)
    return result


def _compile(source, options, output, translator, report):
    options = check_options(source, options)
    compile_wall, compile_begun = time.time(), time.perf_counter()
    timings = {}
    started = time.perf_counter()
    # A user's pipeline runs on every file, as upstream's mlir-opt runs it: never cut straight from the text.
    loaded = (None if options.lowering else direct_source(source, options)) or sources.load(source, options)
    jobs = plan(loaded.modules, source, options)
    warnings = _check_layout(loaded, jobs, options)
    planned = planned_dumps(loaded.modules, options, loaded.has_host_code)
    check_output_roles(source, output, options, planned)
    timings["split"] = time.perf_counter() - started
    dumps = DumpFolder(options, source, planned) if options.dump_dir else None
    compile_ = Compile(source, options, report, dumps.stage_output if dumps else lambda job, stage, output: None)
    try:
        try:
            entry_key = _entry_key(compile_, loaded, jobs) if compile_.cache and not compile_.substitutes else None
            payload = compile_.cache.get(entry_key) if entry_key else None
            entry = compileentry.unpack(payload, jobs, options.format) if payload is not None else None
            if entry is not None:
                started = time.perf_counter()
                warnings += _own_target_warnings(loaded.modules, options, source)
                warnings += _no_kernel_warnings(loaded.modules, entry.absent, source)
                warnings += sources.unpassed_parameter_warnings(loaded.modules, source)
                outputs, binaries, obj = _replay(compile_, loaded, jobs, entry, dumps)
                timings["cached"] = time.perf_counter() - started
            else:
                loaded, jobs, outputs, binaries, obj = _run_middle(compile_, loaded, jobs, translator, dumps, warnings,
                                                                   timings, entry_key)
        finally:
            if compile_.cache:
                compile_.cache.flush()
    finally:
        compile_.remove_scratch()
    header = embed.header(binaries, options.layout, options.section, os.path.basename(source),
                          embed.header_guard(options.header or os.path.splitext(source)[0] + ".h"))
    if dumps:
        commands = {job.id: repro.commands(job, options) for job in jobs}
        containers = repro.container_commands(loaded.modules, jobs, options, loaded.has_host_code)
        dumps.write(REPRO_DUMP, repro.script(jobs, options, commands, containers, compile_.substituted))
        logs = {job.id: outputs[job.id].binaries.get("log", b"").decode("utf-8", "replace") for job in jobs}
        dumps.finish(new_record(source, options, jobs, binaries, warnings, obj, output, compile_.origins,
                                compile_.substituted, commands, logs))
        timings["dumps"] = dumps.seconds
    dependencies = [source] + _dependencies(compile_, jobs) + [toolchain.llvmlite_library()]
    events = [trace.compile_event(source, len(jobs), compile_wall, time.perf_counter() - compile_begun)] + \
        compile_.trace
    return CompileResult(object_bytes=obj, jobs=jobs, dumps=dumps.written if dumps else [], timings=timings,
                         binaries=binaries, header=header, warnings=warnings, dependencies=dependencies,
                         stages=compile_.origins, cache_warnings=remotecache.take_warnings(), trace=events)


def _entry_key(compile_, loaded, jobs):
    """The compile entry's key, or None where a part of it cannot be known (a tool or library missing): the
    compile then reports that where it reports it without a cache, after the source's own errors."""
    try:
        return compileentry.key(compile_, loaded, jobs, compile_.source)
    except CompileError:
        return None


def _translate(source, loaded, jobs, options, translator):
    """The LLVM IR of every module: (loaded, jobs, {module: LLVM IR}, whether the modules are those given). The
    caller's translator serves modules cut straight from the file (what a caller translates ahead); such a module
    that does not translate is read again through mlir-opt, which reports the error at its exact place (or gives
    the modules that translate)."""
    direct = loaded.modules[0].direct
    try:
        return loaded, jobs, (translator if direct else OWN).translate(source, loaded.modules), True
    except CompileError:
        if not direct:
            raise
    loaded = sources.load(source, options)
    jobs = plan(loaded.modules, source, options)
    return loaded, jobs, OWN.translate(source, loaded.modules), False


def _no_kernel_warnings(modules, absent, source):
    return [CompileWarning(f"gpu.module @{module.name} has no kernels: its binary has no entry points", file=source,
                           line=module.line) for module in modules if module.name in absent]


def _run_middle(compile_, loaded, jobs, translator, dumps, warnings, timings, entry_key):
    """Translate, run every job's stages, embed the binaries and emit the host object (dumps as they come);
    stored as a compile entry under `entry_key` when there is one. (loaded, jobs, outputs, binaries, object
    bytes)."""
    source, options = compile_.source, compile_.options
    started = time.perf_counter()
    loaded, jobs, llvm_irs, same = _translate(source, loaded, jobs, options, translator)
    timings["translate"] = time.perf_counter() - started
    warnings += _own_target_warnings(loaded.modules, options, source)
    absent = [module.name for module in loaded.modules
              if not any(attr.target.has_kernels(llvm_irs[module.name]) for attr in module.targets[:1])]
    warnings += _no_kernel_warnings(loaded.modules, absent, source)
    warnings += sources.unpassed_parameter_warnings(loaded.modules, source)
    outputs = {job.id: run_job(compile_, job, llvm_irs[job.module.name]) for job in jobs}
    for job in jobs:
        for stage, path in compile_.substituted.get(job.id, {}).items():
            warnings.append(CompileWarning(f"module @{job.module.name} ({job.chip}): the {stage} stage's output "
                                           f"is the substitute {path}", file=source, line=job.module.line))
    binaries = _embeddings(compile_, loaded, jobs, outputs, dumps)
    started = time.perf_counter()
    host = translate_host(loaded, jobs, outputs, options) if loaded.has_host_code else None
    if dumps and host is not None:
        dumps.write(HOST_DUMP, host)
    obj = _host_object(compile_, loaded, binaries, host)
    compile_.timed("embed", started)
    timings.update(compile_.timings)
    if entry_key and same:
        compile_.cache.put(entry_key, compileentry.pack(jobs, compile_.payloads, binaries, absent, obj, host))
    return loaded, jobs, outputs, binaries, obj


def _host_object(compile_, loaded, binaries, host):
    """The host object: the binaries, with MLIR's launch glue when the file has host code."""
    from ..llvm.ops import object_from_ir

    options, source_name = compile_.options, os.path.basename(compile_.source)
    compile_.report(f"{compile_.source}: host object", (compile_.source, None))
    if host is not None:
        return object_from_ir(embed.host_ir_with_glue(host, binaries, source_name))
    return object_from_ir(embed.host_ir(binaries, options.layout, options.section, source_name))


def _replay(compile_, loaded, jobs, entry, dumps):
    """A compile entry's outputs, as the middle would give them: the stages' outputs (dumped as they come, each
    recorded as cached), the container and host dumps, the binaries and the object."""
    outputs = {}
    for job, payloads in zip(jobs, entry.payloads):
        result = outputs[job.id] = JobOutput(None, {})
        origin = compile_.origins.setdefault(job.id, {})
        for stage in stages.for_format(compile_.options.format):
            wall, begun = time.time(), time.perf_counter()
            output = stage.restore(payloads[stage.suffix])
            origin[stage.suffix] = "cached"
            compile_.on_stage(job, stage.suffix, output)
            if stage.suffix == "isa":
                result.assembly = output
            elif stage.suffix == stages.BINARY:
                result.binaries = output
            compile_.trace.append(trace.stage_event(job, stage.suffix, "cached", wall, begun,
                                                    output if stage.suffix == stages.BINARY else payloads[stage.suffix]))
    if dumps:
        for module in loaded.modules:
            container = fat_container([job.attr for job in jobs if job.module is module], compile_.options,
                                      loaded.has_host_code)
            if container:
                item = next(item for item in entry.embedded if item.module == module.name)
                dumps.write(container_dump(module.name, container), item.data)
        if entry.host is not None:
            dumps.write(HOST_DUMP, entry.host)
    return outputs, entry.embedded, entry.object_bytes


def _dependencies(compile_, jobs):
    """The files besides the source that may shape the outputs: every library the jobs' link stages may read and
    every tool of their targets, besides those the stages did read and run (a build tool must rebuild when one
    changes, whether or not this compile ran it, or the stage cache served it: the same list either way)."""
    libraries = set(compile_.dependencies)
    tools = {entry[2] for entry in (process.tool_stats.get() or {}).values()}
    tools.update(toolchain.found(*(lambda name=name: toolchain.llvm_tool(name)
                                   for name in ("mlir-opt", "mlir-translate"))))  # a missing one is no input
    for job in jobs:
        libraries.update(path for path in job.target.library_inputs(job, compile_.options) if os.path.isfile(path))
        tools.update(job.target.tools(compile_.options))
    return sorted(libraries) + sorted(tools)


def _profile(source, result, started, seconds):
    """Append this compile's start (epoch seconds), duration, stage and tool times to `$MLIRGPU_PROFILE` (JSON
    lines), for the benchmarks."""
    path = os.environ.get("MLIRGPU_PROFILE")
    if not path:
        return
    tools = {name: entry[:2] for name, entry in result.tools.items()}
    line = json.dumps({"source": source, "started": started, "seconds": seconds, "stages": result.timings,
                       "tools": tools, "jobs": len(result.jobs)}, sort_keys=True)
    with open(path, "a", encoding="utf-8") as handle:  # one short append per compile: atomic on POSIX
        handle.write(line + "\n")


def compile_to_object(source, output, options, translator=None, report=None):
    """Compile `source` in this process and write the host object, the C header and the depfile (as asked)
    atomically; the CompileResult without the object's bytes."""
    started, wall = time.perf_counter(), time.time()
    remove_stale_temps([path for path in (output, options.header, options.depfile) if path])
    result = compile_source(source, options, output, translator, report)
    write_atomic(output, result.object_bytes)
    if options.header:  # unchanged text keeps its time: the C files including it are not recompiled
        write_if_changed(options.header, result.header)
    if options.depfile:
        write_atomic(options.depfile, make_depfile(output, result.dependencies))
    _profile(source, result, wall, time.perf_counter() - started)
    result.object_bytes = b""  # written; not sent back over a worker's pipe
    return result
