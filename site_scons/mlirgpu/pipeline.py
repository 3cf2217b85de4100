"""The staged compiler: one pipeline for every target, in upstream `gpu-module-to-binary` order.

`STAGES` is the single ordered table of stages. Each stage is named after the dump file it produces; the same
table drives the pipeline, the dump names (`dump_names`, which the SCons emitter's scan uses), the
docs and the tests. Per (gpu.module, target) job:

    initial.ll  translate (mlir-translate), set triple + data layout from the target machine
    linked.ll   target pre-link hook, then link the target's libraries only-needed and internalize
    opt.ll      LLVM's default pipeline at the target's O level
    isa         PTX / AMDGCN assembly
    <binary>    the target's serializer: cubin (+ fatbin) / hsaco; skipped for format=isa

then every job's binary (or ISA text plus a NUL, for format=isa) is embedded in one host object.
"""
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace

from . import embed
from . import source as sources
from . import process, toolchain, workers
from .embed import Embedded
from .errors import CompileError, CompileWarning
from .fsutil import remove_quietly, remove_stale_temps, write_atomic
from .naming import c_name, file_stem, job_names
from .mlirtext import SYMBOL
from .options import hint


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
    dependencies: list = field(default_factory=list)  # the source, linked libraries and tools used
    tools: dict = field(default_factory=dict)  # tool name -> [runs, seconds, path]
    binaries: list = field(default_factory=list)  # embed.Embedded, as placed in the object
    header: str = ""  # the C header text for the object
    warnings: list = field(default_factory=list)


class _Context:
    """What the stages of one compile share: options, the worker, the dump folder, timings."""

    def __init__(self, options, worker, scratch):
        self.options = options
        self.worker = worker
        self.scratch = scratch
        self.dumps = []
        self.dump_hashes = {}  # dump path -> sha256, for the record (not the record itself)
        self.dependencies = []  # files whose change changes the output: libraries here, tools via process
        self.timings = {}
        self.job = None
        self.stage = None

    def llvm(self, function, *args, stage=None):
        """Call an LLVM primitive for the current job (its module and stage name a crash)."""
        job = self.job
        return self.worker.call(function, *args, what=job.where(stage or self.stage),
                                where=(job.source, job.module.line))

    # The LLVM primitives target hooks may call.
    def undefined_functions(self, job):
        return self.llvm("undefined_functions", job.id)

    def add_control_constants(self, job, constants, flags):
        return self.llvm("add_control_constants", job.id, constants, flags)


def _stage_initial(ctx, job, llvm_ir):
    attr = job.attr
    return ctx.llvm("start", job.id, llvm_ir, attr.triple, attr.chip, attr.features, attr.opt_level,
                    bool(ctx.options.dump_dir))


def _stage_linked(ctx, job, _):
    libraries = job.target.libraries(job, ctx, ctx.options)
    ctx.dependencies += [library.path for library in libraries]
    for library in libraries:
        if not os.path.isfile(library.path):
            problem = "is not a regular file" if os.path.exists(library.path) else "does not exist"
            raise CompileError(f"bitcode library '{library.path}' {problem}", file=job.source,
                               line=job.module.line, fix=f"fix the {hint('link_libs')} / link=[...] path")
    return ctx.llvm("link", job.id, [lib.as_args() for lib in libraries], bool(ctx.options.dump_dir))


def _stage_opt(ctx, job, _):
    return ctx.llvm("optimize", job.id, job.opt_level, bool(ctx.options.dump_dir))


def _stage_isa(ctx, job, _):
    return ctx.llvm("emit_isa", job.id)


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
            problem = attr.target.parameter_problem(attr.params)
            if problem:
                raise CompileError(f"{problem} in {attr.text}", file=source, line=module.line,
                                   fix="write the parameter as MLIR's target attribute defines it")
            try:
                attr.target.check_chip(attr.chip)
            except CompileError as exc:
                raise exc.located(source, module.line)
            # File names may be told apart by case only on some systems, and the header's macros are upper case.
            keys = (("file", stem.lower()), ("symbol", symbol.upper()))
            other = next((seen[key] for key in keys if key in seen), None)
            if other is not None:
                raise CompileError(
                    f"gpu.module @{module.name} and @{other} map to the same file or symbol name '{stem}'",
                    file=source, line=module.line, fix="rename one of the modules",
                )
            seen.update(dict.fromkeys(keys, module.name))
            jobs.append(Job(f"{len(jobs)}", source, module, attr, stem, symbol))
    return jobs


def translate(modules, source):
    """{module name: LLVM IR} for the modules of one source."""
    return dict(zip((module.name for module in modules), translate_pieces(modules, source)))


def translate_pieces(modules, source):
    """LLVM IR text for each module, in order, from one mlir-translate process (pieces split by `// -----`).

    Line numbers inside a chunk count from its marker, so diagnostics name the file's lines only for normalised
    pieces (they carry explicit locations); a failing direct piece is re-read through mlir-opt (`_compile`)."""
    texts = [m.text if i == 0 else "\n" + m.text for i, m in enumerate(modules)]
    joined = "\n// -----".join(texts)
    args = ["--no-implicit-module", "--split-input-file", "--mlir-to-llvmir", "--preserve-ll-uselistorder", "-"]
    text = sources.run_mlir_tool("mlir-translate", args, source, "translating to LLVM IR", text=joined)
    pieces = re.split(r"^(?=; ModuleID = )", text, flags=re.M)
    pieces = [piece for piece in pieces if piece.startswith("; ModuleID = ")]
    if len(pieces) != len(modules):
        raise CompileError(f"mlir-translate returned {len(pieces)} modules for {len(modules)}", file=source)
    return pieces


@dataclass
class JobOutput:
    isa: str
    binaries: dict  # binary suffix -> bytes (empty for format isa)


def run_job(ctx, job, llvm_ir):
    """Run every stage of one job."""
    artifact = llvm_ir
    binaries = {}
    isa = ""
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
                binaries = artifact
                for binary_suffix, data in artifact.items():
                    _dump(ctx, f"{job.stem}.{binary_suffix}", data)
            else:
                if suffix == "isa":
                    isa = artifact
                _dump(ctx, f"{job.stem}.{suffix}", artifact)
    except CompileError:
        ctx.llvm("drop", job.id)
        raise
    return JobOutput(isa, binaries)


def _job_bytes(job, output, fmt):
    """What upstream embeds for one job: ISA text plus a NUL, or the target's binary for the format."""
    if fmt == "isa":
        return output.isa.encode("utf-8") + b"\0"
    return output.binaries[job.target.binary_suffixes(fmt)[-1]]


def _embeddings(ctx, source, jobs, outputs):
    """The binaries of the host object: per module one fat container when it has several targets of one
    family (or the vendor layout needs one), else one per (module, target)."""
    options = ctx.options
    embedded = []
    for module in source.modules:
        mjobs = [job for job in jobs if job.module is module]
        combined = combined_suffix([job.attr for job in mjobs], options, source.has_host_code)
        if combined:
            target = mjobs[0].target
            started = time.perf_counter()
            data = target.combine(mjobs, [outputs[job.id] for job in mjobs], options, ctx.scratch)
            ctx.timings["combine"] = ctx.timings.get("combine", 0.0) + time.perf_counter() - started
            _dump(ctx, f"{file_stem(module.name)}.{combined}", data)
            kind = "fatbin" if combined == "fatbin" else "bundle"
            embedded.append(Embedded(options.symbol_prefix + c_name(module.name), module.name, target.name,
                                     tuple(job.chip for job in mjobs), kind, data))
            continue
        if source.has_host_code:  # as upstream's #gpu.select_object: one target's object per module
            index = _selected_index(module)
            mjobs = [mjobs[min(index, len(mjobs) - 1)]]
        for job in mjobs:
            name = options.symbol_prefix + (c_name(module.name) if source.has_host_code else job.symbol)
            fmt = options.format if not (options.format == "fatbin" and job.target.name == "rocdl") else "bin"
            embedded.append(Embedded(name, module.name, job.target.name, (job.chip,), fmt,
                                     _job_bytes(job, outputs[job.id], options.format)))
    return embedded


def _selected_index(module):
    match = re.search(r"select_object<(\d+)", module.handler)
    return int(match.group(1)) if match else 0


def combined_suffix(attrs, options, host_code):
    """Dump suffix of the module-level fat container embedded for a module with targets `attrs`, or None.

    NVVM: several chips with format fatbin -> one fatbin (every chip's cubin, PTX of the newest). ROCDL: several
    chips, or the vendor layout, with format fatbin -> one clang offload bundle (`.hipfb`). Host code keeps
    upstream's one-object-per-target semantics.
    """
    families = {attr.target.name for attr in attrs}
    if host_code or options.format != "fatbin" or len(families) != 1:
        return None
    if "nvvm" in families:
        return "fatbin" if len(attrs) > 1 else None
    return "hipfb" if len(attrs) > 1 or options.layout == "vendor" else None


def dump_names(module_name, attrs, options, host_code):
    """The dump files of one module with targets `attrs` (objects with .target and .chip), in write order."""
    names = []
    for attr, (stem, _symbol) in zip(attrs, job_names(module_name, attrs)):
        names += [f"{stem}.{suffix}" for suffix in stage_suffixes(attr.target, options.format)]
    combined = combined_suffix(attrs, options, host_code)
    if combined:
        names.append(f"{file_stem(module_name)}.{combined}")
    return names


HOST_DUMP = "host.ll"
RECORD_DUMP = "mlirgpu.json"


def planned_dumps(modules, options, host_code):
    """Every file name (with the dump prefix) a compile of `modules` writes into the dump folder, in order."""
    names = []
    for module in modules:
        names += dump_names(module.name, module.targets, options, host_code)
    names += ([HOST_DUMP] if host_code else []) + [RECORD_DUMP]
    return [options.dump_prefix + name for name in names]


def check_output_roles(source, output, options, dump_names_):
    """Refuse, before anything runs, outputs that would overwrite the input or each other: `-o` equal to the
    source, a header or depfile equal to the object, a dump equal to any of them, one path in two roles."""
    roles = [("the input", source), ("the output object (-o)", output), ("the header", options.header),
             ("the depfile", options.depfile)]
    if options.dump_dir:
        roles += [(f"the dump {name}", os.path.join(options.dump_dir, name)) for name in dump_names_]
    seen = {}
    for role, path in roles:
        if not path:
            continue
        if role != "the input" and os.path.isdir(path):
            raise CompileError(f"{role} '{path}' is a folder", file=source, fix="name a file")
        key = os.path.realpath(path)
        if key in seen:
            raise CompileError(f"{role} and {seen[key]} are the same file '{path}'", file=source,
                               fix="give each output its own path")
        seen[key] = role


def _gpu_binary(module, jobs, outputs, options):
    """`gpu.binary @m [#gpu.object<...>, ...]` carrying our bytes, for translating host code as upstream."""
    kind = {"isa": "assembly = ", "bin": "bin = ", "fatbin": ""}[options.format]
    objects = []
    for job in jobs:
        entries = dict(job.target.object_properties(job, options.format))
        if options.section:  # upstream 22.1.8 records it for NVVM only; we honour it for every target
            entries["section"] = f'"{options.section}"'
        properties = ("properties = {" + ", ".join(f"{k} = {v}" for k, v in sorted(entries.items())) + "}, "
                      if entries else "")
        data = _job_bytes(job, outputs[job.id], options.format)
        if options.format == "isa":
            data = data[:-1]  # the object holds the text; the host translation adds the NUL
        objects.append(f"#gpu.object<{job.attr.text}, {properties}{kind}\"{_mlir_bytes(data)}\">")
    symbol = SYMBOL.search(module.text, module.text.index("gpu.module")).group(1)
    handler = f" {module.handler}" if module.handler else ""
    return f"  gpu.binary @{symbol}{handler} [{', '.join(objects)}]\n"


def _mlir_bytes(data):
    """Bytes as the inside of an MLIR string literal: every byte as a `\\XX` escape."""
    return "\\" + data.hex("\\") if data else ""


def translate_host(source, jobs, outputs, options):
    """Host LLVM IR: each gpu.module replaced by a gpu.binary with our objects, translated by mlir-translate."""
    pieces = {module.name: _gpu_binary(module, [j for j in jobs if j.module is module], outputs, options)
              for module in source.modules}
    container = sources.replace_modules(source.container, pieces)
    return sources.run_mlir_tool("mlir-translate", ["--mlir-to-llvmir", "-"], source.path, "translating host code",
                                 text=container, fix=f"set {hint('host_code', 'ignore')} to embed only the binaries")


def _dump(ctx, name, data):
    if ctx.options.dump_dir:
        started = time.perf_counter()
        path = os.path.join(ctx.options.dump_dir, ctx.options.dump_prefix + name)
        data = data.encode("utf-8") if isinstance(data, str) else data
        write_atomic(path, data)
        ctx.dumps.append(path)
        ctx.dump_hashes[path] = hashlib.sha256(data).hexdigest()
        ctx.timings["dumps"] = ctx.timings.get("dumps", 0.0) + time.perf_counter() - started


def _prepare_dump_dir(path, source):
    try:
        os.makedirs(path, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".probe-")
        probe.close()
    except OSError as exc:
        raise CompileError(f"cannot write the dump folder '{path}': {exc.strerror}", file=source,
                           fix="choose a writable --dump-intermediates folder") from exc


def _own_target_warnings(modules, options, source):
    """Modules that keep their own target(s) although the build names another target (which applies only to
    modules without one): the same on every path (direct cut or mlir-opt)."""
    if not options.target:
        return []
    return [CompileWarning(f"gpu.module @{module.name} carries its own target(s); target {options.target} "
                           "applies only to modules without one", file=source, line=module.line)
            for module in modules if module.targets and all(t.target.name != options.target for t in module.targets)]


def _check_layout(source, options):
    warnings = []
    if options.layout == "vendor":
        if options.format != "fatbin":
            raise CompileError(f"the vendor layout embeds fat binaries, not format '{options.format}'",
                               file=source.path, fix="use --format fatbin with --layout vendor")
        if source.has_host_code:
            raise CompileError("the vendor layout is for objects without host code (MLIR's launch glue loads "
                               "its own binaries)", file=source.path, fix="use --layout plain for this file")
        if options.section:
            warnings.append(CompileWarning(
                f"section '{options.section}' overrides the vendor sections: cuobjdump and roc-obj-ls look only "
                "in .nv_fatbin / .hip_fatbin and will not find this code", file=source.path))
    return warnings


def check_options(source, options, environment=None):
    """`options` validated (see options.validate) and resolved: target-neutral modules get the target's
    default build chip when none is named. Raises a CompileError located in `source`."""
    from .options import validate
    from .targets import TARGETS

    try:
        options = validate(options, TARGETS)
        process.timeout()  # a bad MLIRGPU_TOOL_TIMEOUT is reported before anything runs
    except CompileError as exc:
        raise exc.located(source) from None
    if options.target and not options.chip:
        options = replace(options, chip=TARGETS[options.target].default_build_chip(options, environment))
    return options


def compile_file(source, options, environment=None):
    """Compile every gpu.module of `source`; returns the host object bytes and what was written.

    The compile runs in a worker process (see `workers`), with `environment` (default: this process's)."""
    return _in_worker(environment, "compile_file", source, options)


def compile_to_object(source, output, options, translated=None, environment=None):
    """Compile `source` and write the host object (and the C header, when asked) atomically, in a worker.

    `translated`: this source's entry of `translate_many`, when a build translated several sources at once."""
    return _in_worker(environment, "compile_to_object", source, output, options, translated)


def _pieces_key(modules):
    return hashlib.sha256("\0".join(m.text for m in modules).encode("utf-8")).hexdigest()


def translate_many(paths, at_least=2):
    """Translate the gpu.modules of many sources in one mlir-translate run (a process start-up costs more than
    translating a typical module). Only sources taking the direct path (see scan.direct_source) join, and only
    when at least `at_least` do; returns {path: (pieces key, {module: LLVM IR})}. Any failure returns {}: each
    compile then translates, and reports, on its own."""
    from .scan import direct_source

    batch = []
    for path in paths:
        loaded = direct_source(path, None)
        if loaded is not None:
            batch.append((path, loaded.modules))
    if not batch or len(batch) < at_least:
        return {}
    try:
        irs = translate_pieces([module for _path, modules in batch for module in modules], "<batch>")
    except CompileError:
        return {}
    result = {}
    for path, modules in batch:
        result[path] = (_pieces_key(modules), {m.name: ir for m, ir in zip(modules, irs)})
        irs = irs[len(modules):]
    return result


def _in_worker(environment, entry, *args):
    check_options(args[0], args[-2] if entry == "compile_to_object" else args[-1])  # fail before a worker starts
    with workers.lease() as worker:
        return worker.call(entry, *args, what=f"{args[0]}", where=(args[0], None), environ=environment)


def compile_here(source, options, translated=None, output=None):
    """`compile_file` in this process, which must be a worker (LLVM runs here)."""
    token = process.tool_stats.set({})
    try:
        result = _compile(source, options, translated, output)
        result.tools = process.tool_stats.get()
    finally:
        process.tool_stats.reset(token)
    return result


def _compile(source, options, translated=None, output=None):
    options = check_options(source, options)
    timings = {}
    started = time.perf_counter()
    from .scan import direct_source

    loaded = direct_source(source, options) or sources.load(source, options)
    warnings = _check_layout(loaded, options)
    jobs = plan(loaded.modules, source, options)
    check_output_roles(source, output, options, planned_dumps(loaded.modules, options, loaded.has_host_code))
    timings["split"] = time.perf_counter() - started
    if options.dump_dir:
        _prepare_dump_dir(options.dump_dir, source)
        remove_stale_temps([], whole_folders=[options.dump_dir])
        # The previous record goes first: a compile that fails must not leave it to describe old dumps.
        record_path = os.path.join(options.dump_dir, options.dump_prefix + RECORD_DUMP)
        previous = _previous_dumps(record_path, project_path(source))
        remove_quietly(record_path)
    started = time.perf_counter()
    caller_tools = []  # tools run for this compile outside this process
    try:
        if translated and loaded.modules[0].direct and translated[0] == _pieces_key(loaded.modules):
            llvm_irs = translated[1]  # translated by the caller (with other sources), from these very pieces
            caller_tools = [toolchain.llvm_tool("mlir-translate")]
        else:
            llvm_irs = translate(loaded.modules, source)
    except CompileError:
        if not loaded.modules[0].direct:
            raise
        # Cut straight from the file: let mlir-opt parse it all and report the error at its exact place.
        loaded = sources.load(source, options)
        jobs = plan(loaded.modules, source, options)
        llvm_irs = translate(loaded.modules, source)
    timings["translate"] = time.perf_counter() - started
    warnings += _own_target_warnings(loaded.modules, options, source)
    for module in loaded.modules:
        if not re.search(r"^define (?:[\w\s]+ )?(?:ptx_kernel|amdgpu_kernel) ", llvm_irs[module.name], re.M):
            warnings.append(CompileWarning(f"gpu.module @{module.name} has no kernels: its binary has no entry "
                                           "points", file=source, line=module.line))
    scratch = tempfile.mkdtemp(prefix="mlirgpu-")
    try:
        worker = workers.current
        ctx = _Context(options, worker, scratch)
        outputs = {job.id: run_job(ctx, job, llvm_irs[job.module.name]) for job in jobs}
        binaries = _embeddings(ctx, loaded, jobs, outputs)
        started = time.perf_counter()
        source_name = os.path.basename(source)
        if loaded.has_host_code:
            translated = translate_host(loaded, jobs, outputs, options)
            _dump(ctx, HOST_DUMP, translated)
            ir = embed.host_ir_with_glue(translated, binaries, source_name)
        else:
            ir = embed.host_ir(binaries, options.layout, options.section, source_name)
        obj = worker.call("object_from_ir", ir, what=f"{source}: host object", where=(source, None))
        timings.update(ctx.timings)
        timings["embed"] = time.perf_counter() - started
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    header = embed.header(binaries, options.layout, options.section, source_name,
                          embed.header_guard(options.header or os.path.splitext(source)[0] + ".h"))
    if options.dump_dir:
        _remove_stale_dumps(options.dump_dir, previous, ctx.dumps)
        _dump(ctx, RECORD_DUMP, _record(source, options, jobs, binaries, ctx.dump_hashes, warnings, obj, output))
        timings["dumps"] = ctx.timings["dumps"]
    tools = sorted({entry[2] for entry in (process.tool_stats.get() or {}).values()} | set(caller_tools))
    dependencies = [source] + sorted(set(ctx.dependencies)) + tools + [toolchain.llvmlite_library()]
    return CompileResult(object_bytes=obj, jobs=jobs, dumps=ctx.dumps, timings=timings, binaries=binaries,
                         header=header, warnings=warnings, dependencies=dependencies)


def _previous_dumps(record_path, source):
    """The plain file names the previous compile of the same source listed in its record (a record of another
    source, in a folder shared without --dump-prefix, lists nothing of ours)."""
    try:
        with open(record_path, encoding="utf-8") as handle:
            record = json.load(handle)
        listed = record["dumps"] if record.get("source") == source else []
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return []
    return [name for name in listed if isinstance(name, str) and name == os.path.basename(name)
            and name not in ("", ".", "..") and not name.startswith(".")] if isinstance(listed, list) else []


def _remove_stale_dumps(folder, previous, written):
    """Remove the files the previous compile wrote that this one does not (another target or chip), so a
    dump folder holds what its record lists."""
    keep = {os.path.basename(path) for path in written}
    for name in previous:
        if name not in keep:
            remove_quietly(os.path.join(folder, name))


def project_path(path):
    """`path` relative to the folder the compile runs in (the project), never absolute: records and reports
    are shared between machines and checkouts."""
    return os.path.relpath(os.path.abspath(path)).replace(os.sep, "/")


def _record(source, options, jobs, binaries, dump_hashes, warnings, obj, output=None):
    """What one compile produced, for CI tooling (`mlirgpu.artifacts` builds the manifest from these). Every
    file is listed with its sha256, so a copy restored from a cache can be checked."""
    folder = options.dump_dir
    record = {
        "schema": "scons-mlir-gpu/object-record",
        "version": 1,
        "source": project_path(source),
        "object": {"size": len(obj), "sha256": hashlib.sha256(obj).hexdigest(),
                   "path": os.path.relpath(os.path.abspath(output), os.path.abspath(folder)).replace(os.sep, "/")
                   if output else None},
        "options": {"format": options.format, "layout": options.layout, "section": options.section,
                    "target": options.target, "chip": options.chip, "features": options.features,
                    "opt_level": options.opt_level, "host_code": options.host_code, "opts": options.opts},
        "jobs": [
            {"module": job.module.name, "target": job.target.name, "chip": job.chip, "opt_level": job.opt_level,
             "features": job.attr.features, "stem": job.stem,
             "dumps": [f"{options.dump_prefix}{job.stem}.{suffix}"
                       for suffix in stage_suffixes(job.target, options.format)]}
            for job in jobs
        ],
        "binaries": [
            {"symbol": item.symbol, "module": item.module, "target": item.family, "chips": list(item.chips),
             "format": item.format, "section": embed.section_for(item, options.layout, options.section),
             "size": len(item.data), "sha256": hashlib.sha256(item.data).hexdigest()}
            for item in binaries
        ],
        "dumps": sorted(os.path.relpath(path, folder) for path in dump_hashes),
        "sha256": {os.path.relpath(path, folder): digest for path, digest in sorted(dump_hashes.items())},
        "dump_prefix": options.dump_prefix,
        "warnings": [str(warning) for warning in warnings],
    }
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def _profile(source, result, tools, started, seconds):
    """Append this compile's start (epoch seconds), duration, stage and tool times to `$MLIRGPU_PROFILE` (JSON
    lines), for the benchmarks."""
    path = os.environ.get("MLIRGPU_PROFILE")
    if not path:
        return
    tools = {name: entry[:2] for name, entry in tools.items()}
    line = json.dumps({"source": source, "started": started, "seconds": seconds, "stages": result.timings, "tools": tools,
                       "jobs": len(result.jobs)}, sort_keys=True)
    with open(path, "a", encoding="utf-8") as handle:  # one short append per compile: atomic on POSIX
        handle.write(line + "\n")


def make_depfile(output, dependencies):
    """A Make-style depfile (`output: deps`), as Ninja's and Meson's `depfile` read it."""
    def escape(path):
        if "\n" in path or "\r" in path:
            raise CompileError(f"cannot write a depfile naming '{path.strip()}': a line break in a path",
                               fix="rename the file")
        return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")

    return escape(output) + ": " + " \\\n  ".join(escape(path) for path in dependencies) + "\n"


def compile_to_object_here(source, output, options, translated=None):
    """`compile_to_object` in this process, which must be a worker."""
    started, wall = time.perf_counter(), time.time()
    remove_stale_temps([path for path in (output, options.header, options.depfile) if path])
    result = compile_here(source, options, translated, output)
    tools = result.tools
    write_atomic(output, result.object_bytes)
    if options.header:
        write_atomic(options.header, result.header)
    if options.depfile:
        write_atomic(options.depfile, make_depfile(output, result.dependencies))
    _profile(source, result, tools, wall, time.perf_counter() - started)
    result.object_bytes = b""  # written above; not sent back over the pipe
    return result
