"""SCons tool `mlirgpu`: `env.GpuObject('k.o', 'k.mlir')` compiles the gpu.modules of an MLIR file to a host
object, declaring every intermediate (`<module>.initial.ll/.linked.ll/.opt.ll/.isa` and the binary) as a target
when `GPU_DUMP` is on, so SCons rebuilds, cleans and caches them like any other file.

Construction variables (defaults set with SetDefault, never over a user's value):
  GPU_TARGET      nvvm | rocdl: target for modules that carry none (they are lowered first)
  GPU_CHIP        chip, or a list of chips, for those modules
  GPU_FEATURES    target features (e.g. '+ptx80')
  GPU_OPT_LEVEL   0-3 ('' = the target's default, 2)
  GPU_FORMAT      isa | bin | fatbin (default fatbin, as upstream)
  GPU_SECTION     ELF section of the embedded binaries ('' = .rodata, or the vendor sections)
  GPU_LAYOUT      plain | vendor (.nv_fatbin / .hip_fatbin, which cuobjdump and HIP tools read)
  GPU_SYMBOL_PREFIX  prefix of every C symbol (objects whose modules share names)
  GPU_HOST_CODE   compile | ignore: keep MLIR's launch glue for host code in the source, or embed binaries only
  GPU_ARTIFACTSDIR  where `scons DUMP=1 gpu-artifacts` writes gpu-manifest.json, gpu-report.md/.html and
                  gpu-artifacts.tar.gz (relative to the top directory; default: the top directory)
  GPU_BASELINE    an earlier gpu-manifest.json: the reports show what changed
  GPU_FAIL_ON     regression rules, e.g. 'spills,registers+10%': the artifacts target fails on a match
  GPU_HEADER      the object's C header (default `<object dir>/<object name>.h`; '' for none)
  GPU_LINKLIBS    bitcode libraries to link (dependencies of the object)
  GPU_TOOLKIT     CUDA or ROCm root ('' = found from the environment)
  GPU_OPTS        extra ptxas options
  GPU_DUMP        keep every stage's output (command line: DUMP=1)
  GPU_DUMPDIR     where dumps go (default: `<object dir>/<object name>.dumps`)
  MLIRGPUCOMSTR   what to print per compile ('' = the equivalent `mlirgpu compile` command)
The command line sets any of them (`scons GPU_TARGET=rocdl GPU_CHIP=gfx942 DUMP=1`) through the `options` hook.
The compiler core (`mlirgpu`) does the work; this module only adapts it to SCons.
"""
import concurrent.futures
import importlib.machinery
import importlib.util
import os
import sys
import threading

import SCons.Action
import SCons.Builder
import SCons.Errors
import SCons.Script
import SCons.Subst
import SCons.Tool
import SCons.Util
import SCons.Variables
import SCons.Warnings


def _core_package():
    """The compiler core package `mlirgpu`, which shares its name with this tool.

    SCons registers a tool module in sys.modules under the tool's name, so while this file runs,
    `sys.modules['mlirgpu']` is this tool. The core is imported (or taken from where it was first imported) and
    put back under its own name, so `import mlirgpu` keeps meaning the compiler core for everyone.
    """
    core = sys.modules.get("_mlirgpu_core")
    if core is None:
        tools_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        # SCons puts the toolpath first on sys.path while loading a tool: skip it, and look beside it last
        # (a copied site_scons/ holds the core next to site_tools/).
        search = [p for p in sys.path if os.path.abspath(p or ".") != tools_dir] + [os.path.dirname(tools_dir)]
        spec = importlib.machinery.PathFinder.find_spec("mlirgpu", search)
        if spec is None:
            raise SCons.Errors.StopError("the mlirgpu compiler core is not importable: pip install scons-mlir-gpu")
        core = importlib.util.module_from_spec(spec)
        sys.modules["mlirgpu"] = core
        spec.loader.exec_module(core)
        sys.modules["_mlirgpu_core"] = core
    sys.modules["mlirgpu"] = core
    return core


mlirgpu = _core_package()
from mlirgpu import toolchain, workers  # noqa: E402
from mlirgpu.errors import CompileError  # noqa: E402
from mlirgpu.options import CompileOptions  # noqa: E402
from mlirgpu.pipeline import compile_to_object, translate_many  # noqa: E402
from mlirgpu import artifacts  # noqa: E402
from mlirgpu.pipeline import RECORD_DUMP  # noqa: E402
from mlirgpu.scan import planned_outputs, use_cache_file, uses_build_target  # noqa: E402

# Every variable that changes the output; GPU_DUMP is deliberately absent (dumps only add targets). The
# target/chip/features/O settings enter through MLIRGPU_LOWERING, only for sources they apply to.
SIGNATURE_VARS = [
    "GPU_FORMAT", "GPU_SECTION", "GPU_LAYOUT", "GPU_SYMBOL_PREFIX", "GPU_HOST_CODE", "GPU_LINKLIBS", "GPU_TOOLKIT", "GPU_OPTS",
    "MLIRGPU_VERSIONS", "MLIRGPU_LOWERING",
]


def _lowering_signature(target, source, env, for_signature):
    """GPU_TARGET/CHIP/FEATURES/OPT_LEVEL for sources with target-less modules; '' for the others, so changing
    them rebuilds only the objects they affect."""
    if not source:
        return ""
    node = source[0].get() if hasattr(source[0], "get") else source[0]  # signatures see node proxies
    if not uses_build_target(_source_path(node, absolute=True)):
        return ""
    return "|".join((env.subst("$GPU_TARGET"), ",".join(_as_list(env.get("GPU_CHIP", ""))),
                     env.subst("$GPU_FEATURES"), env.subst("$GPU_OPT_LEVEL")))


def _signature(target, source, env, for_signature):
    """The action signature: every SIGNATURE_VARS value in one string, read directly (values holding `$` are
    still substituted)."""
    parts = []
    for key in SIGNATURE_VARS:
        value = env.get(key, "")
        if callable(value):
            value = value(target, source, env, for_signature)
        elif SCons.Util.is_List(value) and not any("$" in str(v) for v in SCons.Util.flatten(value)):
            value = " ".join(str(v) for v in SCons.Util.flatten(value))
        elif not isinstance(value, str) or "$" in value:
            value = env.subst_target_source("${%s}" % key, SCons.Subst.SUBST_SIG, target, source)
        parts.append(f"{key}={value}")
    return "\n".join(parts)


class _CompileAction(SCons.Action.FunctionAction):
    """The compile action, whose signature is the function's code plus `_signature`, computed directly. SCons
    recomputes an action's signature for each target of an object (eight or more with dumps) and for every
    object of a null build; through a `varlist`, each time would run SCons's substitution machinery just to
    reach the same callable (a third of a 1000-source null build's time in our code)."""

    def get_presig(self, target, source, env, executor=None):
        return self.funccontents + _signature(target, source, env, True).encode("utf-8")


def _as_list(value):
    return [str(v) for v in SCons.Util.flatten(value)] if SCons.Util.is_List(value) else (
        [v for v in str(value).replace(",", " ").split() if v])


def _dump_enabled(env):
    value = env.get("GPU_DUMP", False)
    if isinstance(value, str):
        return value.strip().lower() in ("1", "yes", "true", "on", "y")
    return bool(value)


DEFAULT_DUMPDIR = "${TARGET.dir}/${TARGET.filebase}.dumps"
DEFAULT_HEADER = "${TARGET.dir}/${TARGET.filebase}.h"


def _value(env, key, target=None, source=None):
    """A construction variable as a string; only values holding `$` go through (slow) substitution, since
    this runs for every object on every build, also a null one. The default per-object paths are computed."""
    value = env.get(key, "")
    if isinstance(value, str) and "$" not in value:
        return value
    if value in (DEFAULT_DUMPDIR, DEFAULT_HEADER) and target:
        base = os.path.splitext(str(target[0]))[0]  # relative to SCons's current folder, as $TARGET is
        return base + (".dumps" if value == DEFAULT_DUMPDIR else ".h")
    return env.subst(f"${key}", target=target, source=source)


def _options(env, target, source, with_dumps):
    """Compile options from the construction variables (linked libraries as resolved by the emitter)."""
    level = _value(env, "GPU_OPT_LEVEL", target, source).strip()
    if level and not level.lstrip("-").isdigit():
        raise SCons.Errors.UserError(f"GPU_OPT_LEVEL must be 0, 1, 2 or 3, not '{level}'")
    libs = [_source_path(node) for node in getattr(target[0].attributes, "mlirgpu_libs", [])]
    return CompileOptions(
        format=_value(env, "GPU_FORMAT"),
        section=_value(env, "GPU_SECTION"),
        toolkit=_value(env, "GPU_TOOLKIT"),
        link_libs=tuple(libs),
        opts=_value(env, "GPU_OPTS"),
        dump_dir=_value(env, "GPU_DUMPDIR", target, source) if with_dumps else "",
        target=_value(env, "GPU_TARGET"),
        chip=",".join(_as_list(env.get("GPU_CHIP", ""))),
        features=_value(env, "GPU_FEATURES"),
        opt_level=int(level) if level else None,
        layout=_value(env, "GPU_LAYOUT"),
        host_code=_value(env, "GPU_HOST_CODE"),
        header=_value(env, "GPU_HEADER", target, source),
        symbol_prefix=_value(env, "GPU_SYMBOL_PREFIX", target, source),
    )


def _source_path(node, absolute=False):
    """The file to read: the node itself, or its source-tree original under VariantDir(duplicate=0).

    Actions run from the top directory, so they use (path-independent) relative paths; emitters run while an
    SConscript is read, from its own directory, so they use absolute ones.
    """
    if not os.path.exists(node.abspath):
        node = node.srcnode()
    return node.abspath if absolute else node.path


def _emitter(target, source, env):
    obj = target[0]
    # Linked libraries are resolved here, relative to the SConscript naming them, and become dependencies.
    libs = [env.File(lib) for lib in _as_list(env.get("GPU_LINKLIBS", []))]
    obj.attributes.mlirgpu_libs = libs
    if libs:
        env.Depends(obj, libs)
    options = _options(env, target, source, with_dumps=True)
    extra = [env.File(options.header)] if options.header else []
    if _dump_enabled(env):
        dump_dir = env.Dir(options.dump_dir)
        extra += [dump_dir.File(name) for name in planned_outputs(_source_path(source[0], absolute=True), options)]
        env.Clean(obj, dump_dir)
        _ARTIFACTS.add(env, [obj] + extra, dump_dir.File(RECORD_DUMP))
    elif "gpu-artifacts" in SCons.Script.COMMAND_LINE_TARGETS:
        raise SCons.Errors.UserError("gpu-artifacts collects the intermediates: build with DUMP=1")
    _TRANSLATIONS.declare(source[0], [obj] + extra)
    return [obj] + extra + target[1:], source


class _ArtifactSet:
    """`scons DUMP=1 gpu-artifacts`: the manifest, reports and archive over every GpuObject of the build.

    Like SCons's compilation_db tool, the objects register themselves as they are declared; the alias is made
    by the first one (with that environment's GPU_ARTIFACTSDIR), and only when asked for on the command line,
    so ordinary builds never make or need it.
    """

    def __init__(self):
        self.records = []
        self.targets = None

    def add(self, env, nodes, record):
        if "gpu-artifacts" not in SCons.Script.COMMAND_LINE_TARGETS:
            return
        if self.targets is None:
            where = env.subst("$GPU_ARTIFACTSDIR")
            folder = env.Dir(where if where.startswith("#") or os.path.isabs(where) else "#" + where)
            action = SCons.Action.Action(self._build, self._describe,
                                         varlist=["GPU_BASELINE", "GPU_FAIL_ON", "MLIRGPU_VERSIONS"])
            self.targets = env.Command([folder.File(name) for name in artifacts.OUTPUTS], [], action)
            baseline = env.subst("$GPU_BASELINE")
            if baseline:
                env.Depends(self.targets, env.File(baseline))
            env.Alias("gpu-artifacts", self.targets)
        self.records.append(record)
        env.Depends(self.targets, nodes)

    def _build(self, target, source, env):
        try:
            broken = artifacts.write_artifacts(
                [record.abspath for record in self.records], target[0].dir.abspath,
                artifacts.toolchain_versions(env.subst("$GPU_TOOLKIT")), env.subst("$GPU_TOOLKIT"),
                env.File(env.subst("$GPU_BASELINE")).abspath if env.subst("$GPU_BASELINE") else "",
                env.subst("$GPU_FAIL_ON"))
        except CompileError as exc:
            raise SCons.Errors.BuildError(node=target[0], errstr=str(exc), exitstatus=1) from None
        if broken:
            raise SCons.Errors.BuildError(node=target[0], exitstatus=1, errstr="GPU regressions against the "
                                          "baseline: " + "; ".join(broken))
        return 0

    def _describe(self, target, source, env):
        return f"mlirgpu artifacts ({len(self.records)} objects) -> {target[0].dir}"


_ARTIFACTS = _ArtifactSet()


class _Translations:
    """Few mlir-translate runs for the sources this build is about to compile, instead of one per source.

    Sources are declared as their objects are. One that looks out of date (its object or a declared file is
    missing, or older than the source) joins a batch; full batches start translating in the background at
    once, while SCons still reads the build, and the first compile sends off the rest (split over the build
    jobs); each compile waits only for the run holding its source. A source whose pieces changed since, or
    that was in no batch, translates on its own, so this only ever saves time. The first out-of-date sources
    also start the LLVM workers (as many as build jobs), whose start-up then overlaps SCons's own."""

    # Sources per background run: mlir-translate's start-up (about 40 ms) is shared by many small translations.
    # The first run is smaller, so the first compiles (of the first sources declared) find theirs done early.
    BATCHES = (8, 32)
    SPLIT = 4  # the rest is split over the build jobs in parts of at least this many sources

    def __init__(self):
        self.stale = 0
        self.sent = 0  # background runs sent off
        self.pending = []  # absolute source paths not yet sent off
        self.runs = {}  # absolute source path -> future of the translate_many run holding it
        self.pool = None
        self.flushed = False
        self.lock = threading.Lock()

    def declare(self, source, targets):
        path = _source_path(source, absolute=True)
        if not _will_build() or not _looks_stale(path, targets):
            return
        self.stale += 1
        if self.stale <= _jobs():
            workers.forking(_jobs() > 1)
            workers.prestart(self.stale)
        with self.lock:
            self.pending.append(path)
            if len(self.pending) >= self.BATCHES[min(self.sent, len(self.BATCHES) - 1)]:
                self._send(self.pending)
                self.pending = []

    def _send(self, paths):
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=_jobs(), thread_name_prefix="mlirgpu")
        run = self.pool.submit(translate_many, paths)
        self.sent += 1
        self.runs.update((path, run) for path in paths)

    def get(self, source):
        """The batch translation of `source` (a node), or None."""
        with self.lock:
            if not self.flushed:
                jobs = max(1, min(_jobs(), len(self.pending) // self.SPLIT))
                for part in (self.pending[i::jobs] for i in range(jobs)):
                    if part:
                        self._send(part)
                self.pending = []
                self.flushed = True
        path = _source_path(source, absolute=True)
        run = self.runs.get(path)
        try:
            return run.result().get(path) if run else None
        except Exception:  # only a head start: the compile translates, and reports, on its own
            return None


def _jobs():
    return max(1, SCons.Script.GetOption("num_jobs") or 1)


def _will_build():
    """False for runs that execute no action: -c, -n, -q, -h."""
    return not any(SCons.Script.GetOption(option) for option in ("clean", "no_exec", "question", "help"))


def _looks_stale(source_path, targets):
    """Whether a declared file is missing or older than the source: a guess while SCons reads the build (SCons
    itself decides what to build). A target's `stat` is SCons's own, remembered per node, so SCons reuses it."""
    try:
        newest_input = os.stat(source_path).st_mtime_ns
    except OSError:
        return True
    for target in targets:
        stat = target.stat()
        if stat is None or stat.st_mtime_ns < newest_input:
            return True
    return False


_TRANSLATIONS = _Translations()


def _compile(target, source, env):
    workers.forking(_jobs() > 1)
    obj = target[0]
    options = _options(env, target, source, with_dumps=_dump_enabled(env))
    path = _source_path(source[0])
    try:
        result = compile_to_object(path, obj.path, options, _TRANSLATIONS.get(source[0]))
    except CompileError as exc:
        raise SCons.Errors.BuildError(node=obj, errstr=str(exc), exitstatus=1) from None
    for warning in result.warnings:
        SCons.Warnings.warn(SCons.Warnings.SConsWarning, warning.without_label())
    header = [os.path.normpath(options.header)] if options.header else []
    declared = sorted(os.path.normpath(node.path) for node in target[1:] if os.path.normpath(node.path) not in header)
    written = sorted(os.path.normpath(path) for path in result.dumps)
    if declared != written:
        missing = sorted(set(declared) - set(written))
        extra = sorted(set(written) - set(declared))
        raise SCons.Errors.BuildError(
            node=obj, exitstatus=1,
            errstr=f"{source[0]}: declared outputs differ from what the compile wrote (missing: {missing}, "
                   f"undeclared: {extra}); please report this with the source file",
        )
    for node in target:
        if not os.path.exists(node.abspath):
            raise SCons.Errors.BuildError(node=node, errstr=f"{node} was not written", exitstatus=1)
    return 0


def _gpu_object(env, target=None, source=None, **overrides):
    """`env.GpuObject(target, source)`: the host objects only, so the result goes straight into Program().

    The dumps are targets of the same action all the same; `env.GpuDumps(objects)` returns them.
    """
    nodes = env["MLIRGPU_BUILDER"](env, target, source, **overrides)
    return [node for node in nodes if node.get_executor().get_all_targets()[0] is node]


def _gpu_dumps(env, objects):
    """The dump files declared for `objects` (built by GpuObject or by Object/Program from .mlir sources)."""
    dumps = []
    for node in SCons.Util.flatten([objects]):
        if node.has_builder():
            dumps += [t for t in node.get_executor().get_all_targets()[1:] if not str(t).endswith(".h")]
    return dumps


def _describe(target, source, env):
    custom = env.subst("$MLIRGPUCOMSTR", target=target, source=source)
    if custom:
        return custom
    options = _options(env, target, source, _dump_enabled(env))
    line = f"mlirgpu compile {source[0]} -o {target[0]} --format {options.format}"
    for flag, value in (("--target", options.target), ("--chip", options.chip), ("--section", options.section),
                        ("--dump-intermediates", options.dump_dir)):
        if value:
            line += f" {flag} {value}"
    return line


def _versions(env):
    """Versions of everything that shapes the output, for the action signature (no paths in it)."""
    parts = [f"mlirgpu {mlirgpu.__version__}", toolchain.tool_version(toolchain.llvm_tool("mlir-opt"))]
    try:
        import llvmlite

        parts.append(f"llvmlite {llvmlite.__version__}")
    except ImportError:
        pass
    cuda = toolchain.cuda_toolkit(env.subst("$GPU_TOOLKIT") or None)
    if cuda and os.path.isfile(os.path.join(cuda, "bin", "ptxas")):
        parts.append(toolchain.tool_version(os.path.join(cuda, "bin", "ptxas")))
    return "; ".join(parts)


def options(opts):
    """Map the command line onto the construction variables (`DUMP=1` is an alias of `GPU_DUMP`)."""
    if "GPU_TARGET" in opts.keys():
        return
    opts.Add(SCons.Variables.EnumVariable("GPU_TARGET", "target for modules without one", None,
                                          allowed_values=("nvvm", "rocdl", "")))
    for name, text in (("GPU_CHIP", "chip(s), comma-separated"), ("GPU_FEATURES", "target features"),
                       ("GPU_OPT_LEVEL", "O level 0-3"), ("GPU_SECTION", "ELF section for binaries"),
                       ("GPU_TOOLKIT", "CUDA or ROCm root"), ("GPU_OPTS", "extra ptxas options"),
                       ("GPU_DUMPDIR", "dump folder"), ("GPU_BASELINE", "baseline gpu-manifest.json"),
                       ("GPU_FAIL_ON", "regression rules"), ("GPU_ARTIFACTSDIR", "artifacts folder")):
        opts.Add(name, text, None)
    opts.Add(SCons.Variables.EnumVariable("GPU_FORMAT", "isa | bin | fatbin", None,
                                          allowed_values=("isa", "bin", "fatbin")))
    opts.Add(SCons.Variables.EnumVariable("GPU_LAYOUT", "plain | vendor", None, allowed_values=("plain", "vendor")))
    opts.Add(SCons.Variables.BoolVariable(("GPU_DUMP", "DUMP"), "keep every stage's output", None))


def generate(env):
    try:
        toolchain.llvm_tool("mlir-opt")
        toolchain.llvm_tool("mlir-translate")
    except CompileError as exc:
        raise SCons.Errors.StopError(str(exc)) from None
    env.SetDefault(
        GPU_TARGET="", GPU_CHIP="", GPU_FEATURES="", GPU_OPT_LEVEL="", GPU_FORMAT="fatbin", GPU_SECTION="",
        GPU_LINKLIBS=[], GPU_TOOLKIT="", GPU_OPTS="", GPU_DUMP=False, GPU_LAYOUT="plain", GPU_SYMBOL_PREFIX="",
        GPU_HOST_CODE="compile", GPU_ARTIFACTSDIR="#", GPU_BASELINE="", GPU_FAIL_ON="",
        GPU_DUMPDIR=DEFAULT_DUMPDIR, GPU_HEADER=DEFAULT_HEADER, OBJSUFFIX=".o",
        MLIRGPUCOMSTR="",
    )
    env.SetDefault(MLIRGPU_VERSIONS=_versions(env), MLIRGPU_LOWERING=_lowering_signature)
    use_cache_file(env.File("#.sconsign.mlirgpu.json").abspath)  # scans of the sources, kept across runs
    action = _CompileAction(_compile, {"strfunction": _describe})
    builder = SCons.Builder.Builder(
        action=action, emitter=_emitter, src_suffix=".mlir", suffix="$OBJSUFFIX", single_source=True,
    )
    env["MLIRGPU_BUILDER"] = builder
    env.AddMethod(_gpu_object, "GpuObject")
    env.AddMethod(_gpu_dumps, "GpuDumps")
    # `.mlir` files are also plain sources of Object/Program/Library, like `.c` files.
    for builder in SCons.Tool.createObjBuilders(env):
        builder.add_action(".mlir", action)
        builder.add_emitter(".mlir", _emitter)


def exists(env):
    try:
        return bool(toolchain.llvm_tool("mlir-opt"))
    except CompileError:
        return False
