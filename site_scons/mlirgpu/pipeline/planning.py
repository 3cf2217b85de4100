"""Planning a compile before any work: the options resolved and checked, the jobs of a source's modules, and the
name of every file the compile will write.

The same functions serve the compile (mlirgpu.pipeline.driver), the fast scan (mlirgpu.pipeline.scan, for build-system emitters
and `list-outputs`) and the front ends, so what is declared and what is written come from one place.
"""
import os
from dataclasses import dataclass, replace

from . import lowering, stages
from ..llvm import process
from ..errors import CompileError
from ..util.fsutil import LIBRARY_INPUT, size_problem
from ..util.naming import LIBRARY_SUFFIX, file_stem, job_names, library_file
from ..compile_options import CheckedOptions, hint, validate

RECORD_DUMP = "mlirgpu.json"
HOST_DUMP = "host.ll"
REPRO_DUMP = "repro.sh"  # the stock-tool commands that remake the stage dumps (mlirgpu.pipeline.repro)


@dataclass
class Job:
    """One (gpu.module, target) compilation."""

    id: str
    source: str
    module: object  # source.GpuModule
    attr: object  # targets.base.TargetAttr
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


def check_options(source, options, environment=None):
    """`options` validated (see compile_options.validate) and resolved, as the CheckedOptions the pipeline takes:
    target-neutral modules get the target's default build chip when none is named. The one check, which each
    front end calls once (the CLI, the Python API, the SCons tool); options it made come back as they are.
    Raises a CompileError located in `source`."""
    from ..targets import PLUGIN_PROBLEMS, TARGETS

    if isinstance(options, CheckedOptions):
        return options
    try:
        if PLUGIN_PROBLEMS:
            raise CompileError(PLUGIN_PROBLEMS[0], fix="correct MLIRGPU_TARGETS or make the module importable")
        options = validate(lowering.apply(validate(options, TARGETS)), TARGETS)  # an upstream pipeline's asks, where unset
        process.timeout()  # a bad MLIRGPU_TOOL_TIMEOUT is reported before anything runs
        process.compile_processes()  # and a bad MLIRGPU_COMPILE_PROCESSES, though one module never needs it
        _check_library_sizes(options.link_libs)
    except CompileError as exc:
        raise exc.located(source) from None
    if options.target and not options.chip:
        options = replace(options, chip=TARGETS[options.target].lowering.default_build_chip(options, environment))
    return CheckedOptions(**options.__dict__)


def require_checked(options, entry):
    """`options` as the pipeline's entry point `entry` takes them: made by check_options. Anything else is a
    caller that skipped its front end's check, a programming error (TypeError) before anything runs."""
    if not isinstance(options, CheckedOptions):
        raise TypeError(f"{entry} takes the CheckedOptions of mlirgpu.pipeline.planning.check_options, not "
                        f"{type(options).__name__}: check the options at the front end first")
    return options


def _check_library_sizes(paths):
    """Refuse a -l file too large to be read whole (fsutil.LIBRARY_INPUT) before anything runs, even where the stage
    cache would not read it; a missing one is the link stage's to report (a module may not need it)."""
    for path in paths:
        try:
            size = os.stat(path).st_size
        except OSError:
            continue
        problem = size_problem(size, LIBRARY_INPUT)
        if problem:
            raise CompileError(f"bitcode library '{path}': {problem}", fix=LIBRARY_INPUT.fix)


def tool_identities(options, environment=None):
    """{tool: identity} of everything that shapes a compile's output with these options: this package, llvmlite's
    LLVM, the MLIR tools and each target's tools (version line and sha256 of the bytes; no paths). The SCons
    signature and the CI manifest both use it, so a tool upgraded in place is seen by both."""
    from ..llvm import toolchain
    from ..version import __version__
    from ..targets import TARGETS

    tools = toolchain.found(*(lambda name=name: toolchain.llvm_tool(name, environment)
                              for name in ("mlir-opt", "mlir-translate")))
    tools += [path for target in TARGETS.values() for path in target.toolchain.tools(options, environment)]
    paths = {}  # base name -> the first tool of that name
    for path in tools:
        paths.setdefault(os.path.basename(path), path)
    found = toolchain.identities(list(paths.values()), llvmlite=True)
    identities = {"mlirgpu": __version__, "llvmlite": found["llvmlite"]}
    identities.update((name, found[path]) for name, path in paths.items())
    # The MLIR release under one name whatever the tool is called (Debian's is mlir-opt-22).
    identities["mlir"] = next((value for key, value in identities.items() if key.startswith("mlir-opt")), "missing")
    return identities


def missing_target(source, module=None, line=None):
    """The error of a compile that needs the build's target and has none: gpu.module @`module` carries none, or
    (`module` None) kernels are outlined from gpu.launch. One text wherever it is found (planning, lowering,
    `list-outputs` for a build system's configure step), its fix listing the targets."""
    from ..targets import TARGETS

    return CompileError(f"gpu.module @{module} has no target" if module else "gpu.launch needs outlining",
                        file=source, line=line,
                        fix=f"set {hint('target', tuple(TARGETS))} (and {hint('chip')}) or give the module a target "
                            f"attribute ({', '.join('#' + t.attribute for t in TARGETS.values())})")


def plan(modules, source, options):
    """The jobs for `modules`: parameters, chips and name collisions checked, before any work."""
    if not modules:
        raise CompileError("no gpu.module found", file=source,
                           fix="add a gpu.module (this file has nothing to compile for the GPU)")
    jobs = []
    seen = {}
    for module in modules:
        if not module.targets:
            raise missing_target(source, module.name, module.line)
        for attr, (stem, symbol) in zip(module.targets, job_names(module.name, module.targets)):
            problem = attr.target.checks.parameter_problem(attr.params)
            if problem:
                raise CompileError(f"{problem} in {attr.text}", file=source, line=module.line,
                                   fix="write the parameter as MLIR's target attribute defines it")
            try:
                attr.target.checks.check_chip(attr.chip)
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


def fat_container(attrs, options, host_code):
    """Dump suffix of the one container embedded for a module with targets `attrs` (every chip of one
    target, as its `fat_container` hook decides), or None. Host code keeps upstream's one object per target."""
    targets = {attr.target for attr in attrs}
    if host_code or len(targets) != 1:
        return None
    return targets.pop().outputs.fat_container(len(attrs), options)


def container_dump(module_name, container):
    """The dump file of a module's fat container (`container`: its suffix, as fat_container gives it)."""
    return f"{file_stem(module_name)}.{container}"


def dump_names(module_name, attrs, options, host_code):
    """The dump files of one module with targets `attrs` (objects with .target and .chip), in write order."""
    names = []
    for attr, (stem, _symbol) in zip(attrs, job_names(module_name, attrs)):
        names += [f"{stem}.{suffix}" for suffix in stages.dump_suffixes(attr.target, options.format,
                                                                         options.emit)]
    container = fat_container(attrs, options, host_code) if options.emit != stages.LIBRARY else None
    if container:
        names.append(container_dump(module_name, container))
    return names


def planned_dumps(modules, options, host_code):
    """Every file name (with the dump prefix) a compile of `modules` writes into the dump folder, in order."""
    names = []
    for module in modules:
        names += dump_names(module.name, module.targets, options, host_code)
    if options.emit != stages.LIBRARY:  # a library has no host code, and no stock-tool script (yet)
        names += ([HOST_DUMP] if host_code else []) + [REPRO_DUMP]
    return [options.dump_prefix + name for name in names + [RECORD_DUMP]]


def library_prefix(output):
    """The path every library file of a library compile starts with: `-o` without a `.bc` suffix."""
    return output[: -len(LIBRARY_SUFFIX)] if output.endswith(LIBRARY_SUFFIX) else output


def library_files(modules, output, options):
    """The bitcode files a library compile of `modules` writes: [(path, target name, chip)], one per target,
    `<prefix>.<target>.bc`, or one per chip, `<prefix>.<target>.<chip>.bc`, for a target the library is
    built for several chips of (its code, its device libraries' control constants, may differ per chip).
    naming.library_for reads these names back, so a kernel's link takes the file of its own target and chip."""
    chips = {}
    for module in modules:
        for attr in module.targets:
            listed = chips.setdefault(attr.target.name, [])
            if attr.chip not in listed:
                listed.append(attr.chip)
    prefix = library_prefix(output)
    return [(library_file(prefix, target, None if len(listed) == 1 else chip), target, chip)
            for target, listed in chips.items() for chip in listed]


def _real_path(path, folders):
    """os.path.realpath(path), each folder resolved once (`folders`): a compile checks a dozen files in one or two
    folders, and resolving a path looks at every folder above it."""
    folder, name = os.path.split(os.path.abspath(path))
    if name in ("", ".", "..") or os.path.islink(path):
        return os.path.realpath(path)
    if folder not in folders:
        folders[folder] = os.path.realpath(folder)
    return os.path.join(folders[folder], name)


def check_output_roles(source, output, options, dump_names_):
    """Refuse, before anything runs, outputs that would overwrite the input or each other: `-o` equal to the
    source, a header or depfile equal to the object, a dump equal to any of them, one path in two roles."""
    roles = [("the input", source), ("the output object (-o)", output), ("the header", options.header),
             ("the depfile", options.depfile)]
    if options.dump_dir:
        roles += [(f"the dump {name}", os.path.join(options.dump_dir, name)) for name in dump_names_]
    seen = {}
    folders = {}
    for role, path in roles:
        if not path:
            continue
        if role != "the input" and os.path.isdir(path):
            raise CompileError(f"{role} '{path}' is a folder", file=source, fix="name a file")
        key = _real_path(path, folders)
        if key in seen:
            raise CompileError(f"{role} and {seen[key]} are the same file '{path}'", file=source,
                               fix="give each output its own path")
        seen[key] = role
