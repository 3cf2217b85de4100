"""A library compile (emit=library): the gpu.modules of a `.mlir` file hold device functions, and become LLVM
bitcode libraries that kernels in other files link (`-l`, `GPU_LINKLIBS`, `link = [...]`), as upstream's
`gpu-module-to-binary` links its `l=` files and libdevice: only what a kernel needs, then internalized.

    read, plan, translate   as an object's compile (mlirgpu.pipeline.driver), modules with or without a target
    per job, the stages     initial.ll -> linked.ll -> bc (stages.for_format(..., "library")): the library's own
                            libraries (other libraries, device libraries) linked as a kernel's are; its own
                            functions keep the source's linkage, so its external ones are what it exports
    per target and chip     one file (planning.library_files), the jobs' bitcode linked whole when several
                            gpu.modules of the file are built for it; written only when its bytes change
    record                  with dumps: the stage dumps and the record; with a depfile asked for, the depfile

No kernel is needed, and none is warned about. Every stage goes through the stage cache like an object's.
"""
import hashlib
import os

from . import jobrunner, stagerunner
from . import source as sources
from .compileresult import CompileResult, compile_dependencies, own_target_warnings
from .dumps import DumpFolder
from .planning import check_output_roles, library_files, plan, planned_dumps, require_checked
from .record import make_depfile, new_record, project_path
from .scan import direct_source
from .translation import translate_source
from ..errors import CompileError
from ..llvm import process, toolchain
from ..util.fsutil import write_atomic, write_if_changed


def compile_library(source, output, options, translator, report, runner=None):
    """Compile the gpu.modules of `source` into the bitcode libraries `<output>.<target>[.<chip>].bc` (and the
    dumps and depfile as asked), in this process; the CompileResult (no object bytes). `options`: a front end's
    CheckedOptions; `runner`: how the jobs run (mlirgpu.pipeline.jobrunner; default: in turn, here)."""
    require_checked(options, "compile_library")
    token = process.tool_stats.set({})
    try:
        result, files = _compile(source, output, options, translator, report, runner or jobrunner.IN_TURN)
        result.tools = process.tool_stats.get()
    finally:
        process.tool_stats.reset(token)
    if options.depfile:
        write_atomic(options.depfile, make_depfile(files[0], result.dependencies))
    return result


def _compile(source, output, options, translator, report, runner):
    loaded = (None if options.lowering else direct_source(source, options)) or sources.load(source, options)
    jobs = plan(loaded.modules, source, options)
    files = library_files(loaded.modules, output, options)
    planned = planned_dumps(loaded.modules, options, False)
    for path, _target, _chip in files:
        check_output_roles(source, path, options, planned)
    _refuse_cycle(source, jobs, files, options)
    dumps = DumpFolder(options, source, planned) if options.dump_dir else None
    compile_ = stagerunner.Compile(source, options, report,
                                   dumps.stage_output if dumps else lambda job, stage, output: None, runner)
    try:
        loaded, jobs, llvm_irs, _same = translate_source(source, loaded, jobs, options, translator, compile_.warn)
        outputs = jobrunner.run_jobs(compile_, jobs, llvm_irs, dumps)
    except BaseException:
        if dumps:  # a stage runner killed mid-write (Ctrl-C: mlirgpu.execution.fanout) left its temp file
            dumps.remove_temps()
        raise
    finally:
        if compile_.cache:
            compile_.cache.flush()
        compile_.remove_scratch()
    written = []
    for path, target, chip in files:
        members = [job for job in jobs if job.target.name == target and job.chip == chip]
        data = _joined(source, path, [outputs[job.id].binaries["bc"] for job in members], members)
        write_if_changed(path, data)  # unchanged bytes keep their time: nothing linking it is rebuilt
        written.append({"path": project_path(path), "target": target, "chip": chip,
                        "modules": [job.module.name for job in members], "size": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
    warnings = own_target_warnings(loaded.modules, options, source) + \
        sources.unpassed_parameter_warnings(loaded.modules, source)
    if dumps:
        record = new_record(source, options, jobs, [], warnings, b"", None, compile_.origins, compile_.substituted,
                            {}, {})
        dumps.finish({**record, "libraries": written})
    dependencies = [source] + compile_dependencies(compile_, jobs, serialized=False) + [toolchain.llvmlite_library()]
    return CompileResult(object_bytes=b"", jobs=jobs, dumps=dumps.written if dumps else [], timings=compile_.timings,
                         warnings=warnings, dependencies=dependencies, stages=compile_.origins,
                         cache_warnings=compile_.warnings, trace=compile_.trace,
                         llvm_modules=compile_.llvm_modules), [path for path, _target, _chip in files]


def _joined(source, path, parts, jobs):
    """The library file's bytes: the one job's bitcode, or every job's linked whole (a function two gpu.modules
    define is an error naming both)."""
    if len(parts) == 1:
        return parts[0]
    from ..llvm import ops as llvm_ops

    try:
        return llvm_ops.joined_bitcode(parts)
    except RuntimeError as exc:
        names = " and ".join(f"@{job.module.name}" for job in jobs)
        raise CompileError(f"gpu.modules {names} cannot share the library {os.path.basename(path)}: "
                           f"{str(exc).strip()}", file=source, line=jobs[-1].module.line,
                           fix="define each function in one gpu.module only (or give it internal linkage)") from None


def _refuse_cycle(source, jobs, files, options):
    """A library that links one of its own files (through -l or link = [...]) links itself: a cycle."""
    own = {os.path.realpath(path) for path, _target, _chip in files}
    for job in jobs:
        for path in job.target.codegen.user_libraries(job.attr, options.link_libs):
            if os.path.realpath(path) in own:
                raise CompileError(f"the library links its own output {path} (a cycle)", file=source,
                                   line=job.module.line, fix="remove it from the -l / link = [...] libraries")
