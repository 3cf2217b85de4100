"""The compile driver: one pipeline for every target, in upstream `gpu-module-to-binary` order.

    read the source        cut its gpu.modules straight from the text (scan.direct_source), else mlir-opt
    plan                   jobs (module x target), names, checks, before any work (planning)
    translate              mlir-translate, one run for all modules and the host code with placeholder binaries
                           (or the caller's translator: translation; hostplaceholder)
    per job, the stages    initial.ll -> linked.ll -> opt.ll -> isa -> binary: MLIR's `ModuleToObject::run`
                           (its translation amended, then link, optimize, emit, serialize), with the targets' hooks
                           (stagerunner)
    embed                  the binaries in one host object (with host code: MLIR's launch glue, its IR patched
                           with the binaries; hostobject), and the C header
    record                 with dumps: repro.sh and the record (record); with a depfile asked for, the depfile

A whole compile's middle may come from the stage cache as one entry (compileentry), replayed as the stages
would have given it. Everything here runs in the process that calls it, which must be one where LLVM may run (a
worker: see mlirgpu.frontends.api and mlirgpu.execution.compiles). Progress and stage outputs leave through
callbacks: `report(what, where)` before each step (a worker passes it to its caller, which names the step if
LLVM aborts), and the dump folder's `stage_output` (mlirgpu.pipeline.dumps), so no stage knows whether anything
is dumped or watched.
"""
import dataclasses
import json
import os
import time

from . import compileentry, embed, hostobject, hostplaceholder, jobrunner, repro, spool, stagerunner
from . import source as sources
from ..llvm import process, toolchain
from ..util import environment, trace
from ..util.heap import large_source, release_free_memory, trim_freed_tops
from .compileresult import CompileResult, compile_dependencies, own_target_warnings
from .dumps import DumpFolder
from .library import compile_library
from ..errors import CompileError, CompileWarning
from ..util.mlirtext import Unreadable
from ..util.fsutil import remove_stale_temps, write_atomic, write_atomic_with, write_if_changed
from ..compile_options import hint
from .planning import (HOST_DUMP, REPRO_DUMP, check_output_roles, container_dump, fat_container, plan, planned_dumps,
                       require_checked)
from .record import make_depfile, new_record
from .scan import direct_source, scan_file
from .stages import LIBRARY
from .translation import OWN, translate_with_host


def compile_to_object(source, output, options, translator=None, report=None, runner=None):
    """Compile `source` in this process and write the host object, the C header and the depfile (as asked)
    atomically; the CompileResult without the object's bytes, its binaries' or its modules' text (its jobs
    name their modules; the rest is in the files).
    `options`: a front end's CheckedOptions. Where the compile allows (mlirgpu.pipeline.spool), the stage
    runners spool the binaries and the object is copied from the spool, never held whole."""
    require_checked(options, "compile_to_object")
    if options.emit == LIBRARY:  # bitcode libraries, not an object (mlirgpu.pipeline.library)
        return compile_library(source, output, options, translator or OWN, report or _no_report, runner)
    started, wall = time.perf_counter(), time.time()
    large = large_source(source)
    if large:
        trim_freed_tops()  # before its threads free the tools' outputs (util.heap)
    remove_stale_temps([path for path in (output, options.header, options.depfile) if path])
    with spool.Spool() as spooling:
        result = _compile_source(source, options, output, translator, report, runner, spooling)
        obj = result.object_bytes
        if isinstance(obj, spool.ObjectParts):
            write_atomic_with(output, obj.write_to)
        else:
            write_atomic(output, obj)
    if options.header:  # unchanged text keeps its time: the C files including it are not recompiled
        write_if_changed(options.header, result.header)
    if options.depfile:
        write_atomic(options.depfile, make_depfile(output, result.dependencies))
    _profile(source, result, wall, time.perf_counter() - started)
    result.object_bytes = b""  # written: neither it, the binaries' bytes nor the modules' text go back
    result.binaries = [dataclasses.replace(item, data=b"") for item in result.binaries]
    modules = {id(job.module): dataclasses.replace(job.module, text="") for job in result.jobs}
    result.jobs = [dataclasses.replace(job, module=modules[id(job.module)]) for job in result.jobs]
    if large:
        release_free_memory()  # the compile's own data, freed: not held while the result goes back
    return result


def compile_source(source, options, output=None, translator=None, report=None, runner=None):
    """Compile every gpu.module of `source` in this process; the CompileResult (with tool statistics).

    `output`: the object's path, when one is written (checked against the other outputs before any work).
    `translator`: where the modules' LLVM IR comes from (mlirgpu.pipeline.translation; default: mlir-translate).
    `runner`: how the jobs run (mlirgpu.pipeline.jobrunner; default: in turn, here; the front ends pass the
    forked runners of mlirgpu.execution.fanout). `options`: a front end's CheckedOptions."""
    require_checked(options, "compile_source")
    if options.emit == LIBRARY:  # its files are named after a prefix: only compile_to_object writes them
        raise CompileError("a library compile writes files: it needs their prefix", file=source,
                           fix="use compile_to_object(source, PREFIX, options): PREFIX.<target>.bc")
    return _compile_source(source, options, output, translator, report, runner, None)


def _compile_source(source, options, output, translator, report, runner, spooling):
    token = process.tool_stats.set({})
    try:
        result = _compile(source, options, output, translator or OWN, report or _no_report,
                          runner or jobrunner.IN_TURN, spooling)
        result.tools = process.tool_stats.get()
    finally:
        process.tool_stats.reset(token)
    return result


def _no_report(what, where):
    """The default progress callback: nobody is told."""


def _compile(source, options, output, translator, report, runner, spooling):
    compile_wall, compile_begun = time.time(), time.perf_counter()
    timings = {}
    started = time.perf_counter()
    # A user's pipeline runs on every file, as upstream's mlir-opt runs it: never cut straight from the text.
    loaded = (None if options.lowering else direct_source(source, options)) or \
        sources.load(source, options, _scanned(source) if options.lowering else None)
    jobs = plan(loaded.modules, source, options)
    warnings = _check_layout(loaded, jobs, options)
    dumps = _checked_dump_folder(source, output, options, loaded)
    timings["split"] = time.perf_counter() - started
    compile_ = stagerunner.Compile(source, options, report,
                                   dumps.stage_output if dumps else lambda job, stage, output: None, runner)
    try:
        try:
            entry_key = _entry_key(compile_, loaded, jobs) if compile_.cache and not compile_.substitutes else None
            payload = compile_.cache.get(entry_key) if entry_key else None
            entry = compileentry.unpack(payload, jobs, options.format) if payload is not None else None
            if entry is not None:
                started = time.perf_counter()
                warnings += _module_warnings(loaded.modules, entry.absent, options, source)
                outputs, binaries, obj = _replay(compile_, loaded, jobs, entry, dumps)
                timings["cached"] = time.perf_counter() - started
            else:
                if spooling and not (dumps or entry_key or loaded.has_host_code):  # see mlirgpu.pipeline.spool
                    compile_.spool = spooling
                loaded, jobs, outputs, binaries, obj = _run_middle(compile_, loaded, jobs, translator, dumps, warnings,
                                                                   timings, entry_key)
        finally:
            if compile_.cache:
                compile_.cache.flush()
    except BaseException:
        if dumps:  # a stage runner killed mid-write (Ctrl-C: mlirgpu.execution.fanout) left its temp file
            dumps.remove_temps()
        raise
    finally:
        compile_.remove_scratch()
    header = embed.header(binaries, options.layout, options.section, os.path.basename(source),
                          embed.header_guard(options.header or os.path.splitext(source)[0] + ".h"))
    if dumps:
        _finish_dumps(compile_, dumps, loaded, jobs, outputs, binaries, warnings, obj, output)
        timings["dumps"] = dumps.seconds
    dependencies = [source] + compile_dependencies(compile_, jobs) + [toolchain.llvmlite_library()]
    events = compile_.trace  # the compile's own event first, then its stages'
    events.whole.insert(0, trace.compile_event(source, len(jobs), compile_wall, time.perf_counter() - compile_begun,
                                               process.tool_stats.get()))
    return CompileResult(object_bytes=obj, jobs=jobs, dumps=dumps.written if dumps else [], timings=timings,
                         binaries=binaries, header=header, warnings=warnings, dependencies=dependencies,
                         stages=compile_.origins, cache_warnings=compile_.warnings,
                         trace=events, llvm_modules=compile_.llvm_modules)


def _checked_dump_folder(source, output, options, loaded):
    """The compile's dump folder (or None without one), once every file it will write is checked against the
    outputs. The planned names are not held while the compile runs: four per module (40,000 strings at 10,000
    modules, 2.4 MB of the compile's process while its runners work: issue 40)."""
    planned = planned_dumps(loaded.modules, options, loaded.has_host_code)
    check_output_roles(source, output, options, planned)
    return DumpFolder(options, source, planned) if options.dump_dir else None


def _scanned(source):
    """The fast scan's gpu.modules of `source` (the lowering then reads its modules without a normalising
    mlir-opt run), or None where the scan steps aside."""
    try:
        return scan_file(source).modules
    except (Unreadable, UnicodeDecodeError, OSError):
        return None


def _run_middle(compile_, loaded, jobs, translator, dumps, warnings, timings, entry_key):
    """Translate, run every job's stages, embed the binaries and emit the host object (dumps as they come);
    stored as a compile entry under `entry_key` when there is one. (loaded, jobs, outputs, binaries, object
    bytes)."""
    source, options = compile_.source, compile_.options
    started = time.perf_counter()
    placeholder = hostplaceholder.placeholder(loaded, jobs, options) if loaded.has_host_code else None
    loaded, jobs, llvm_irs, same, host_ir = translate_with_host(source, loaded, jobs, options, translator,
                                                                compile_.warn, placeholder)
    timings["translate"] = time.perf_counter() - started
    if compile_.spool:  # the jobs as translated (a module that did not translate cut straight is planned again)
        compile_.spool.plan(loaded, jobs, options, lambda job, output: hostobject.job_bytes(job, output,
                                                                                            options.format))
    absent = [module.name for module in loaded.modules
              if not any(attr.target.codegen.has_kernels(llvm_irs[module.name]) for attr in module.targets[:1])]
    warnings += _module_warnings(loaded.modules, absent, options, source)
    if compile_.spool:  # each job reads its module's LLVM IR from the spool's folder, not this process's memory
        llvm_irs = compile_.spool.translations(llvm_irs)
    outputs = jobrunner.run_jobs(compile_, jobs, llvm_irs, dumps)
    for job in jobs:
        for stage, path in compile_.substituted.get(job.id, {}).items():
            warnings.append(CompileWarning(f"module @{job.module.name} ({job.chip}): the {stage} stage's output "
                                           f"is the substitute {path}", file=source, line=job.module.line))
    binaries = hostobject.embeddings(compile_, loaded, jobs, outputs, dumps)
    started = time.perf_counter()
    host = hostobject.translate_host(loaded, jobs, outputs, options, placeholder, host_ir) \
        if loaded.has_host_code else None
    if dumps and host is not None:
        dumps.write(HOST_DUMP, host)
    obj = hostobject.host_object(compile_, binaries, host)
    compile_.timed("embed", started)
    timings.update(compile_.timings)
    if entry_key and same:
        compile_.cache.put(entry_key, compileentry.pack(jobs, compile_.payloads, binaries, absent, obj, host))
    return loaded, jobs, outputs, binaries, obj


def _replay(compile_, loaded, jobs, entry, dumps):
    """A compile entry's outputs, as the middle would give them: the stages' outputs (dumped as they come, each
    recorded as cached), the container and host dumps, the binaries and the object."""
    outputs = {}
    for job, payloads in zip(jobs, entry.payloads):
        result = stagerunner.replay_job(compile_, job, payloads)
        compile_.fold(job, result)
        outputs[job.id] = result.output
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


def _finish_dumps(compile_, dumps, loaded, jobs, outputs, binaries, warnings, obj, output):
    """What the dump folder gets after the middle: repro.sh, then the record (written last)."""
    options = compile_.options
    commands = {job.id: repro.commands(job, options) for job in jobs}
    containers = repro.container_commands(loaded.modules, jobs, options, loaded.has_host_code)
    dumps.write(REPRO_DUMP, repro.script(jobs, options, commands, containers, compile_.substituted))
    logs = {job.id: outputs[job.id].binaries.get("log", b"").decode("utf-8", "replace") for job in jobs}
    dumps.finish(new_record(compile_.source, options, jobs, binaries, warnings, obj, output, compile_.origins,
                            compile_.substituted, commands, logs))


def _entry_key(compile_, loaded, jobs):
    """The compile entry's key, or None where a part of it cannot be known (a tool or library missing): the
    compile then reports that where it reports it without a cache, after the source's own errors."""
    try:
        return compileentry.key(compile_, loaded, jobs, compile_.source)
    except CompileError:
        return None


def _module_warnings(modules, absent, options, source):
    """The warnings about the modules themselves, the same whether the middle ran or came from the cache:
    their own targets beside the build's, those without kernels (`absent`), parameters no stage passes on."""
    return (own_target_warnings(modules, options, source) + _no_kernel_warnings(modules, absent, source)
            + sources.unpassed_parameter_warnings(modules, source))


def _no_kernel_warnings(modules, absent, source):
    return [CompileWarning(f"gpu.module @{module.name} has no kernels: its binary has no entry points", file=source,
                           line=module.line) for module in modules if module.name in absent]


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
    plain = sorted({job.target.name for job in jobs if job.target.outputs.vendor_section is None})
    if plain:
        raise CompileError(f"target {plain[0]} has no vendor layout", file=source.path,
                           fix=f"use {hint('layout', 'plain')}")
    if options.section:
        vendors = sorted({job.target.outputs.vendor_section for job in jobs}, key=lambda vendor: vendor.section)
        return [CompileWarning(f"section '{options.section}' overrides the vendor sections: "
                               f"{' and '.join(v.readers for v in vendors)} look only in "
                               f"{' / '.join(v.section for v in vendors)} and will not find this code",
                               file=source.path)]
    return []


def _profile(source, result, started, seconds):
    """Append this compile's start (epoch seconds), duration, stage and tool times and the most LLVM modules its
    stages held at once to `$MLIRGPU_PROFILE` (JSON lines), for the benchmarks."""
    path = environment.value("MLIRGPU_PROFILE")
    if not path:
        return
    tools = {name: entry[:2] for name, entry in result.tools.items()}
    line = json.dumps({"source": source, "started": started, "seconds": seconds, "stages": result.timings,
                       "tools": tools, "jobs": len(result.jobs), "llvm_modules": result.llvm_modules}, sort_keys=True)
    with open(path, "a", encoding="utf-8") as handle:  # one short append per compile: atomic on POSIX
        handle.write(line + "\n")
