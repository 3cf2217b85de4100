"""The SCons tool `mlirgpu`: `.mlir` sources become host objects, with every stage's output a real target.

    env = Environment(tools=["default", "mlirgpu"])
    obj = env.GpuObject("kernels", "kernels.mlir")         # or a .mlir among the sources of Program,
    env.SharedLibrary("gpu", ["kernels.mlir", "glue.c"])    # StaticLibrary, SharedLibrary, LoadableModule

Variables: every GPU_* construction variable is described once (mlirgpu.compile_options, plus the build-only ones
below) and listed by `scons -h`. A value given on the command line (`scons GPU_FORMAT=bin`) wins over every
value the build files set (Environment keywords, Replace, builder overrides, SetDefault); those win over the
tool's defaults, which are never written into the environment (so `env.SetDefault(...)` after loading the tool
works). Paths given in a SConscript are relative to it (`#` is the top folder); GPU_DUMPDIR given on the
command line is a root below which each object gets its own folder; GPU_SUBSTITUTE and GPU_TRACE name one
folder or file for the whole build, relative to the top folder wherever they are set.

The emitter declares the header and, with GPU_DUMP, every dump (read from the source by mlirgpu.pipeline.scan), so
SCons rebuilds, cleans and caches them; a scanner makes the device libraries a compile may link dependencies;
the action signature holds every setting that shapes the output and the identity (version and bytes) of each
tool and of llvmlite for the toolkit the object uses. Compiler warnings are printed as compilers print them
(`file.mlir:LINE: warning: ...`); GPU_WARNINGS=none hides them, GPU_WARNINGS=error fails the target.

The compiler core does the work; this module only adapts it to SCons. The package's `generate` and `exists`
call this module's: the package is the tool (see mlirgpu/__init__.py).
"""
import dataclasses
import difflib
import hashlib
import os
import shlex
import sys
import threading

import SCons.Action
import SCons.Builder
import SCons.Environment
import SCons.Errors
import SCons.Node.FS
import SCons.Scanner
import SCons.Script
import SCons.Tool
import SCons.Util
import SCons.Variables

from ... import errors
from ...cache import remote as remotecache
from ...llvm import toolchain
from ...execution import compiles
from ...util.cmdline import option_words
from ...errors import CompileError
from ...util.fsutil import remove_quietly
from ...compile_options import OPTIONS, CompileOptions, to_argv
from ...pipeline.dumps import read_listed_dumps
from ...pipeline.planning import RECORD_DUMP, check_options, tool_identities
from ...pipeline.scan import planned_outputs, predicted_libraries, use_cache_file, uses_build_target
from ...targets import TARGETS

# The build-only variables, beside the compile options' (mlirgpu.compile_options.OPTIONS): name, help, default.
BUILD_VARIABLES = (
    ("GPU_DUMP", "keep every stage's output as a target (command line: DUMP=1)", False),
    ("GPU_WARNINGS", "compiler warnings: show, none, or error", "show"),
    ("GPU_CACHE", "the stage cache (outputs are the same with it on or off; MLIRGPU_CACHE=off also disables it)",
     True),
    ("GPU_REMOTE_CACHE", "a shared stage cache: redis://HOST:PORT/DB, ?mode=read to only read it "
     "(MLIRGPU_REMOTE_CACHE also sets it)", ""),
    ("GPU_EXECUTOR", "distributed compiles: dask://HOST:PORT of a Dask scheduler whose workers have this toolchain "
     "(MLIRGPU_EXECUTOR also sets it)", ""),
    ("GPU_TRACE", "write a Chrome trace of every compile's stages here when the build ends (Perfetto, "
     "chrome://tracing)", ""),
    ("GPU_ARTIFACTSDIR", "where `gpu-artifacts` writes the manifest, reports and archive", "#"),
    ("GPU_BASELINE", "an earlier gpu-manifest.json: the reports show what changed", ""),
    ("GPU_FAIL_ON", "regression rules for gpu-artifacts, e.g. spills,registers+10%", ""),
)
WARNINGS = ("show", "none", "error")
LIST_VARIABLES = ("GPU_CHIP", "GPU_LINKLIBS")


def _defaults():
    defaults = {option.variable: getattr(CompileOptions(), option.name) for option in OPTIONS if option.variable}
    defaults.update({"GPU_OPT_LEVEL": "", "GPU_LINKLIBS": [], "GPU_HEADER": None, "GPU_DUMPDIR": None})
    defaults.update({name: default for name, _help, default in BUILD_VARIABLES})
    return defaults


DEFAULTS = _defaults()


def _as_list(value):
    """A list variable's value: a Python list, or text with commas and/or spaces (SCons list syntax)."""
    if SCons.Util.is_List(value):
        return [str(item) for item in SCons.Util.flatten(value) if str(item)]
    return [item for item in str(value or "").replace(",", " ").split() if item]


def _bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "yes", "true", "on", "y")
    return bool(value)


def make_variables(args=None):
    """A Variables object describing every GPU_* variable (`scons -h` lists it, with allowed values)."""
    variables = SCons.Variables.Variables(args=SCons.Script.ARGUMENTS if args is None else args)
    for option in OPTIONS:
        if not option.variable:
            continue
        default = DEFAULTS[option.variable]
        text = option.help
        if option.variable == "GPU_TARGET":
            choices = ("",) + tuple(TARGETS)
        elif option.choices:
            choices = ("",) + option.choices if default in ("", None) else option.choices
        else:
            choices = None
        if option.variable in LIST_VARIABLES:
            text += "; a list: commas or spaces"
        if choices:
            variables.Add(SCons.Variables.EnumVariable(option.variable, text, default, allowed_values=choices))
        else:
            variables.Add(option.variable, text, "" if default is None else default)
    for name, text, default in BUILD_VARIABLES:
        if name == "GPU_DUMP":
            variables.Add(SCons.Variables.BoolVariable(("GPU_DUMP", "DUMP"), text, default))
        elif name == "GPU_CACHE":
            variables.Add(SCons.Variables.BoolVariable(name, text, default))
        elif name == "GPU_WARNINGS":
            variables.Add(SCons.Variables.EnumVariable(name, text, default, allowed_values=WARNINGS))
        else:
            variables.Add(name, text, default)
    return variables


class _CommandLine:
    """The GPU_* values given on the command line, checked once per run: they win over the build files."""

    def __init__(self):
        self.values = None
        self.variables = None

    def load(self):
        if self.values is None:
            self.variables = make_variables()
            scratch = SCons.Environment.Base(tools=[])
            self.variables.Update(scratch)  # EnumVariable / BoolVariable check and convert, as SCons users know
            given = set(SCons.Script.ARGUMENTS)
            self.values = {}
            for variable in self.variables.options:
                if given & set([variable.key] + list(variable.aliases)):
                    self.values[variable.key] = scratch[variable.key]
            self._warn_unknown(given)
        return self.values

    def _warn_unknown(self, given):
        known = [key for variable in self.variables.options for key in [variable.key] + list(variable.aliases)]
        for name in sorted(given):
            if name.startswith("GPU_") and name not in known:
                near = difflib.get_close_matches(name, known, n=1)
                advice = f"; did you mean {near[0]}?" if near else "; `scons -h` lists the GPU_* variables"
                sys.stderr.write(f"scons: warning: unknown variable {name}{advice}\n")


_COMMAND_LINE = _CommandLine()


def setting(env, name):
    """The value of GPU_* variable `name` for `env`: the command line's, else the build files', else the
    tool's default."""
    values = _COMMAND_LINE.values if _COMMAND_LINE.values is not None else _COMMAND_LINE.load()
    if name in values:
        return values[name]
    value = env.get(name)
    return DEFAULTS.get(name) if value is None else value


def _text(env, name, target=None, source=None):
    value = setting(env, name)
    if SCons.Util.is_List(value):
        return value
    value = "" if value is None else str(value)
    return env.subst(value, target=target, source=source) if "$" in value else value


def search_environment(env):
    """Tool discovery reads the build's execution environment first (env['ENV']), then this process's.
    Remembered per execution environment once the build files are read (scan and signature ask each object)."""
    execution = env.get("ENV") or _NO_ENV
    if not _READ_DONE:
        return toolchain.search_environment(execution)
    known = _SEARCH_ENVIRONMENTS.get(id(execution))
    if known is None or known[0] is not execution:
        known = _SEARCH_ENVIRONMENTS[id(execution)] = (execution, toolchain.search_environment(execution))
    return known[1]


_NO_ENV = {}
_SEARCH_ENVIRONMENTS = {}  # id(env['ENV']) -> (env['ENV'], its search environment), once the build files are read


def worker_environment(env):
    """The environment a compile runs in: this process's, with the build's tool search variables (and the
    stage cache off with GPU_CACHE=0)."""
    environ = dict(os.environ)
    environ.update((name, value) for name, value in search_environment(env) if value)
    if not _bool(setting(env, "GPU_CACHE")):
        environ["MLIRGPU_CACHE"] = "off"
    if _remote_cache(env):
        environ[remotecache.VARIABLE] = _remote_cache(env)
    return environ


def _remote_cache(env):
    """The remote cache an object's compiles use: GPU_REMOTE_CACHE, else $MLIRGPU_REMOTE_CACHE, or ''."""
    return str(setting(env, "GPU_REMOTE_CACHE") or os.environ.get(remotecache.VARIABLE, "")).strip()


def _executor(env):
    """The Dask scheduler of this object's compiles (GPU_EXECUTOR, else $MLIRGPU_EXECUTOR), checked, or ''."""
    return compiles.cluster(_text(env, "GPU_EXECUTOR") or os.environ.get("MLIRGPU_EXECUTOR", ""))


def _object_paths(env, obj):
    """(header node or None, dump folder node) of an object: GPU_HEADER / GPU_DUMPDIR as set (relative to the
    SConscript that set them), or beside the object: `k.h` / `k.dumps` for a static object `k.o`,
    `k.shared.h` / `k.shared.dumps` for a shared one (so one source can feed both)."""
    base = os.path.splitext(obj.name)[0] + (".shared" if getattr(obj.attributes, "shared", False) else "")
    header = setting(env, "GPU_HEADER")
    if header is None:
        header_node = obj.dir.File(base + ".h")
    else:
        header = env.subst(str(header), target=[obj]) if "$" in str(header) else str(header)
        header_node = _path_node(env, "GPU_HEADER", header) if header else None
    folder = setting(env, "GPU_DUMPDIR")
    if folder is None or folder == "":
        dump_dir = obj.dir.Dir(base + ".dumps")
    elif "GPU_DUMPDIR" in _COMMAND_LINE.load():  # a root for every object: one folder per object below it
        top = env.Dir("#")
        root = str(folder) if os.path.isabs(str(folder)) or str(folder).startswith("#") else "#" + str(folder)
        below = os.path.normpath(os.path.join(root, obj.dir.get_path(top), base))
        dump_dir = _path_node(env, "GPU_DUMPDIR", below, folder=True)
    else:
        folder = env.subst(str(folder), target=[obj]) if "$" in str(folder) else str(folder)
        dump_dir = _path_node(env, "GPU_DUMPDIR", folder, folder=True)
    return header_node, dump_dir


def _options(env, target, source):
    """The compile options of an object (paths relative to the top folder, where actions run), resolved and
    checked; raises CompileError. Header, dump folder and libraries are the nodes the emitter resolved (relative
    to the SConscript that declared the object). Remembered per object once the build files are read."""
    obj = target[0]
    remembered = getattr(obj.attributes, "mlirgpu_options", None)
    if remembered is not None:
        if isinstance(remembered, CompileError):
            raise remembered
        return remembered
    header, dump_dir = getattr(obj.attributes, "mlirgpu_paths", None) or _object_paths(env, obj)
    libs = [_source_path(node) for node in getattr(obj.attributes, "mlirgpu_libs", [])]
    try:
        options = _env_options(env, target, source, header=header.path if header else "", dump_dir=dump_dir.path,
                               link_libs=tuple(libs))
    except CompileError as exc:
        options = exc
    if _READ_DONE:
        obj.attributes.mlirgpu_options = options
    if isinstance(options, CompileError):
        raise options
    return options


def _env_options(env, target, source, **paths):
    """The compile options `env` gives (without the object's own paths unless given); raises CompileError."""
    values = {option.name: _text(env, option.variable, target, source) for option in OPTIONS
              if option.variable and option.name not in ("chip", "link_libs", "header", "dump_dir")}
    values.update(chip=",".join(_as_list(setting(env, "GPU_CHIP"))), opt_level=values["opt_level"] or None, **paths)
    if values["substitute"]:
        values["substitute"] = _read_dir(_substitute_dir(env, values["substitute"])).path
    return check_options(_source_path(source[0]), CompileOptions(**values), search_environment(env))


_READ_DONE = []  # set once SCons builds: the build files can no longer change an object's settings


def _source_path(node, absolute=False):
    """The file to read for a source or library node: where SCons itself reads it (see _read_node).

    Actions run from the top directory, so they use (path-independent) relative paths; emitters run while an
    SConscript is read, from its own directory, so they use absolute ones. A file in a repository outside the top
    folder has an absolute path either way.
    """
    node = _read_node(node)
    return node.abspath if absolute else node.path


def _read_node(node):
    """The node whose file SCons reads for `node` (its actions get `node.rfile()`): the node itself when its file
    is there or is built by this build; else its source-tree original under VariantDir (duplicate=0 reads it
    there, duplicate=1 copies it only when it builds, after the build files are read), or a repository's copy
    (`scons -Y`, `Repository()`). The emitter, scanner, signature and action all read the same file."""
    if node.is_derived() or os.path.exists(node.abspath):
        return node
    source = node.srcnode()
    return source.rfile() if source is not node else node.rfile()


def _read_dir(folder):
    """A folder's counterpart of _read_node: the local folder when it is there, else a repository's."""
    if os.path.isdir(folder.abspath):
        return folder
    source = folder.srcnode()
    return source.rdir() if source is not folder else folder.rdir()


def _emitter(target, source, env, shared=False):
    obj = target[0]
    obj.attributes.shared = 1 if shared else False
    libs = [_path_node(env, "GPU_LINKLIBS", lib) for lib in _as_list(setting(env, "GPU_LINKLIBS"))]
    obj.attributes.mlirgpu_libs = libs  # resolved here, relative to the SConscript naming them
    if libs:
        env.Depends(obj, libs)
    header, dump_dir = obj.attributes.mlirgpu_paths = _object_paths(env, obj)
    if _text(env, "GPU_TRACE"):
        _top_file(env, _text(env, "GPU_TRACE"))  # a folder there stops the build now, not when it ends
    extra = [header] if header else []
    if header:
        _include_for_users(env, header)
    _forget_stale_dumps(env, obj, dump_dir)
    try:
        options = _options(env, target, source)
    except CompileError:
        options = None  # the action reports it (read time is not where one object's error should stop a build)
    if options is not None and options.substitute:
        _depend_on_substitutes(env, obj, source, options)
    if _bool(setting(env, "GPU_DUMP")):
        readable = os.path.isfile(_source_path(source[0], absolute=True))
        # A source another builder makes does not exist yet: its dumps are declared from the next build on.
        obj.attributes.mlirgpu_unplanned = not readable
        if options is not None and readable:
            extra += [dump_dir.File(name) for name in planned_outputs(_source_path(source[0], absolute=True), options)]
        record = dump_dir.File(RECORD_DUMP)
        record.set_precious()  # SCons keeps it until the compile has read which dumps it lists (see _compile)
        _ARTIFACTS.add(env, [obj] + extra, record)
    elif "gpu-artifacts" in SCons.Script.COMMAND_LINE_TARGETS:
        raise SCons.Errors.UserError("gpu-artifacts collects the intermediates: build with DUMP=1")
    _claim(dump_dir, obj)
    try:
        remote = _executor(env)
    except CompileError:
        remote = ""  # the action reports it, as it reports any other setting's error
    if not remote:  # compiles sent to a cluster need no local translations or workers
        _expect(env, source[0], [obj] + extra)
    return [obj] + extra + target[1:], source


def _expect(env, source, targets):
    """A source that looks out of date is named to the build session while SCons still reads the build files,
    so its workers start and its translation is made meanwhile (see mlirgpu.execution.compiles.BuildSession)."""
    path = _source_path(source, absolute=True)
    if _will_build() and _looks_stale(path, targets):
        _SESSION.expect(path, remote_cache=bool(_remote_cache(env)))


def _substitute_dir(env, value):
    """GPU_SUBSTITUTE's folder: relative to the top folder (where `scons` runs), as on the command line."""
    return _path_node(env, "GPU_SUBSTITUTE", value if os.path.isabs(value) or value.startswith("#") else "#" + value,
                      folder=True)


def _top_file(env, value):
    """A file named on the command line or in a build file, relative to the top folder (GPU_TRACE)."""
    return _path_node(env, "GPU_TRACE", value if os.path.isabs(value) or value.startswith("#") else "#" + value)


def _path_node(env, variable, path, folder=False):
    """The node of the file (or folder) a GPU_* variable names. SCons refuses a folder where a file is meant, and
    the reverse, with a traceback; here that stops the build with one line naming the variable (the emitter asks
    for each of these nodes first, while SCons reads the build files)."""
    try:
        return env.Dir(path) if folder else env.File(path)
    except TypeError as exc:  # SCons: "Directory /x found where file expected." (or the reverse)
        raise SCons.Errors.StopError(f"{variable}={path.lstrip('#')}: {str(exc).rstrip('.')} (fix: name a "
                                     f"{'folder' if folder else 'file'} in {variable})") from None


def _depend_on_substitutes(env, obj, source, options):
    """The substitutes of this object's jobs, as dependencies: editing one rebuilds, and so does adding or
    removing one (the list of present names is a dependency too). Looked up as entries first: a folder named like
    a dump is no File node (the compile says what it is)."""
    folder = _substitute_dir(env, options.substitute)
    names = planned_outputs(_source_path(source[0], absolute=True), options)
    present = [folder.File(node.name) for node in map(folder.Entry, names)
               if os.path.isfile(_source_path(node, absolute=True))]
    env.Depends(obj, present + [env.Value("mlirgpu substitutes: " + ",".join(sorted(node.name for node in present)))])


def _static_emitter(target, source, env):
    return _emitter(target, source, env, shared=False)


def _shared_emitter(target, source, env):
    return _emitter(target, source, env, shared=True)


_DUMP_OWNERS = {}


def _claim(dump_dir, obj):
    """One dump folder per object: two objects writing one record would overwrite each other's."""
    owner = _DUMP_OWNERS.setdefault(dump_dir.abspath, obj.abspath)
    if owner != obj.abspath:
        raise SCons.Errors.UserError(
            f"objects {os.path.relpath(owner)} and {os.path.relpath(obj.abspath)} share the dump folder "
            f"{dump_dir.path} (fix: give each its own GPU_DUMPDIR, e.g. with ${{TARGET.filebase}} in it)")


def _forget_stale_dumps(env, obj, dump_dir):
    """`scons -c` removes every file a compile of this object ever declared: the files its last record lists
    (also after a build with dumps when cleaning without), and its own dump folder."""
    if not SCons.Script.GetOption("clean"):
        return
    listed = read_listed_dumps(os.path.join(dump_dir.abspath, RECORD_DUMP))
    env.Clean(obj, [dump_dir.File(name) for name in listed + [RECORD_DUMP]])
    if dump_dir.name.endswith(".dumps") and dump_dir.dir.abspath == obj.dir.abspath:
        env.Clean(obj, dump_dir)


def _library_scanner(node, env, path):
    """The bitcode files a compile of this source may link (device libraries, `link = [...]` files). For one of
    our objects (`path`, see _scanned_object) the options are the object's own, which its signature uses next."""
    if not os.path.isfile(_source_path(node, absolute=True)):
        return []
    _READ_DONE[:] = [True]
    try:
        if path and hasattr(path[0].attributes, "mlirgpu_paths"):
            options = _options(env, list(path), [node])
        else:
            options = _env_options(env, [], [node])
    except CompileError:
        return []
    environment = search_environment(env)
    found = predicted_libraries(_source_path(node, absolute=True), options, environment)
    return [env.fs.File(path, env.fs.Top) for path in found]  # relative ones to the top folder, where actions run


def _scanned_object(env, folder, target, source):
    """The scanner's `path` argument: the object the scan is for. SCons gives a scanner function only the source,
    the environment and this value, which it computes from the targets with this function."""
    return tuple(target[:1]) if target else ()


LIBRARY_SCANNER = SCons.Scanner.Base(_library_scanner, name="mlirgpu-libraries", skeys=[".mlir"],
                                     path_function=_scanned_object)


def _identity(env, options):
    """The identities (version and bytes) of every tool and of llvmlite a compile with this toolkit and search
    path uses (planning.tool_identities); no paths, so checkouts at different places share a CacheDir."""
    environment = search_environment(env)
    key = (options.toolkit, environment)
    if key not in _IDENTITIES:
        identities = tool_identities(options, environment)
        _IDENTITIES[key] = "; ".join(f"{name} {identity}" for name, identity in sorted(identities.items()))
    return _IDENTITIES[key]


_IDENTITIES = {}


def _signature(target, source, env):
    """Every setting that shapes the output, and the tool identities. Target, chip, features, O level and the
    lowering pipeline count only for sources with target-less modules, so changing them rebuilds only those."""
    _READ_DONE[:] = [True]
    try:
        options = _options(env, target, source)
    except CompileError as exc:
        return f"invalid: {exc}"
    node = source[0].get() if hasattr(source[0], "get") else source[0]  # signatures see node proxies
    lowering = uses_build_target(_source_path(node, absolute=True))
    shaping = [option.name for option in OPTIONS if option.name not in ("dump_dir", "dump_prefix", "depfile", "header")
               and (lowering or option.name not in ("target", "chip", "features", "opt_level", "lowering"))]
    named = _as_named(env, target, source, options)
    parts = [f"{name}={named.get(name, getattr(options, name))!r}" for name in shaping]
    parts.append(f"header={'yes' if options.header else 'no'}")
    return "\n".join(parts + [_identity(env, options)])


def _as_named(env, target, source, options):
    """The libraries and the substitute folder as the build files name them (relative to the top folder), not
    where the compile reads them: an out-of-tree build's signature then holds no repository path, and it shares a
    CacheDir with a build in place (the files' contents are dependencies of their own)."""
    named = {"link_libs": tuple(node.path for node in getattr(target[0].attributes, "mlirgpu_libs", []))}
    if options.substitute:
        named["substitute"] = _substitute_dir(env, _text(env, "GPU_SUBSTITUTE", target, source)).path
    return named


class _CompileAction(SCons.Action.FunctionAction):
    """The compile action, whose signature is the function's code plus `_signature`, computed directly (SCons
    recomputes an action's signature for each target of an object and for every object of a null build)."""

    def get_presig(self, target, source, env, executor=None):
        """The hash of the function's code and `_signature` (some kilobytes), which SCons hashes again twice
        for each target of an object in every build."""
        contents = self.funccontents + _signature(target, source, env).encode("utf-8")
        return hashlib.sha256(contents).hexdigest().encode("ascii")

    def genstring(self, target, source, env, executor=None):
        """The action as SCons records it (`--debug=explain` shows the old and new ones): the command line,
        so a changed setting is named."""
        return _command_line(target, source, env)


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
            from ...reports import artifacts  # only for this target: it imports what reports need

            where = _text(env, "GPU_ARTIFACTSDIR")
            folder = env.Dir(where)
            action = SCons.Action.Action(self._build, self._describe, varlist=["GPU_BASELINE", "GPU_FAIL_ON"])
            self.targets = env.Command([folder.File(name) for name in artifacts.OUTPUTS], [], action)
            baseline = _text(env, "GPU_BASELINE")
            if baseline:
                env.Depends(self.targets, env.File(baseline))
            env.Alias("gpu-artifacts", self.targets)
            self.env = env
        self.records.append(record)
        env.Depends(self.targets, nodes)

    def _build(self, target, source, env):
        from ...reports import artifacts

        toolkit = _text(self.env, "GPU_TOOLKIT")
        baseline = _text(self.env, "GPU_BASELINE")
        try:
            trace = _text(self.env, "GPU_TRACE")
            broken = artifacts.write_artifacts(
                [record.abspath for record in self.records], target[0].dir.abspath,
                artifacts.toolchain_versions(toolkit), toolkit, self.env.File(baseline).abspath if baseline else "",
                _text(self.env, "GPU_FAIL_ON"), trace=_top_file(self.env, trace).abspath if trace else "")
        except CompileError as exc:
            raise SCons.Errors.BuildError(node=target[0], errstr=str(exc), exitstatus=1) from None
        if broken:
            what = "GPU regressions against the baseline" if baseline else "GPU_FAIL_ON rules broken"
            raise SCons.Errors.BuildError(node=target[0], exitstatus=1, errstr=f"{what}: " + "; ".join(broken))
        return 0

    def _describe(self, target, source, env):
        return f"mlirgpu artifacts ({len(self.records)} objects) -> {target[0].dir}"


_ARTIFACTS = _ArtifactSet()


def _jobs():
    return max(1, SCons.Script.GetOption("num_jobs") or 1)


def _will_build():
    """False for runs that execute no action: -c, -n, -q, -h."""
    return not any(SCons.Script.GetOption(option) for option in ("clean", "no_exec", "question", "help"))


def _looks_stale(path, targets):
    """Whether a declared file is missing or older than the source: a guess while SCons reads the build (SCons
    itself decides what to build). A target's `stat` is SCons's own, remembered per node, so SCons reuses it."""
    try:
        newest_input = os.stat(path).st_mtime_ns
    except OSError:
        return True
    for target in targets:
        stat = target.stat()
        if stat is None or stat.st_mtime_ns < newest_input:
            return True
    return False


def _tell(text):
    sys.stderr.write(f"mlirgpu: {text}\n")


_SESSION = compiles.BuildSession(_jobs, _tell)  # this run's compiles


def _compile(target, source, env):
    """The compile action: the object, its header and its dumps, and no file it declared before and does not
    now; warnings said as GPU_WARNINGS asks, and the dumps written checked against those declared."""
    obj = target[0]
    _, dump_dir = obj.attributes.mlirgpu_paths
    declared = {node.abspath for node in target}
    # What the last compile wrote and this one won't (the record is precious: SCons kept it for this).
    for name in read_listed_dumps(os.path.join(dump_dir.abspath, RECORD_DUMP)):
        if dump_dir.File(name).abspath not in declared:
            remove_quietly(dump_dir.File(name).abspath)
    path = _source_path(source[0])
    try:
        options = _options(env, target, source)
        if not _bool(setting(env, "GPU_DUMP")):
            options = dataclasses.replace(options, dump_dir="")
        trace = _text(env, "GPU_TRACE")
        result = _SESSION.compile(path, obj.path, options, worker_environment(env), _executor(env),
                                  trace=_top_file(env, trace).abspath if trace else "")
    except CompileError as exc:
        raise SCons.Errors.BuildError(node=obj, errstr=str(exc), exitstatus=1) from None
    finally:
        _SESSION.done(path)
    mode = _text(env, "GPU_WARNINGS")
    for warning in result.cache_warnings:  # the cache's, never the build's fault
        sys.stderr.write(f"mlirgpu: {warning}\n")
    if mode != "none":
        for warning in result.warnings:
            sys.stderr.write(f"{warning}\n")
        if mode == "error" and result.warnings:
            raise SCons.Errors.BuildError(node=obj, exitstatus=1,
                                          errstr=f"{len(result.warnings)} warning(s) and GPU_WARNINGS=error")
    declared = sorted(os.path.normpath(node.path) for node in target[1:] if node.path != options.header)
    written = sorted(os.path.normpath(path) for path in result.dumps)
    if declared != written and getattr(obj.attributes, "mlirgpu_unplanned", False) and set(declared) <= set(written):
        sys.stderr.write(f"mlirgpu: {source[0]} did not exist when the build files were read (another builder "
                         "makes it): its dumps are written, and declared as targets from the next build on\n")
    elif declared != written:
        missing = sorted(set(declared) - set(written))
        extra = sorted(set(written) - set(declared))
        raise SCons.Errors.BuildError(
            node=obj, exitstatus=1,
            errstr=f"{source[0]}: declared outputs differ from what the compile wrote (missing: {missing}, "
                   f"undeclared: {extra}); please report this with the source file",
        )
    return 0


def _describe(target, source, env):
    """What SCons echoes: $MLIRGPUCOMSTR, or the equivalent `mlirgpu compile` command (copy and paste it to
    reproduce the build)."""
    custom = env.subst("$MLIRGPUCOMSTR", target=target, source=source)
    return custom or _command_line(target, source, env)


def _command_line(target, source, env):
    """The `mlirgpu compile` command of an object, to paste into a shell: every word quoted, a value starting with
    `-` joined to its flag, a source starting with `-` last, after `--`. Remembered per object once the build
    files are read (SCons asks for it once per target of the object, eight with dumps, in every build)."""
    obj = target[0]
    remembered = getattr(obj.attributes, "mlirgpu_command_line", None)
    if remembered is not None:
        return remembered
    path = _source_path(source[0])
    words = option_words("-o", target[0].path)
    try:
        options = _options(env, target, source)
    except CompileError:
        options = None
    if options is not None:
        if not _bool(setting(env, "GPU_DUMP")):
            options = dataclasses.replace(options, dump_dir="")
        words += to_argv(options)
    words = words + ["--", path] if path.startswith("-") else [path] + words
    line = shlex.join(["mlirgpu", "compile"] + words)
    if options is not None and _READ_DONE:
        obj.attributes.mlirgpu_command_line = line
    return line


def _gpu_object(env, target=None, source=None, **overrides):
    """`env.GpuObject(target, source)`: the host objects only, so the result goes straight into Program().

    The header and dumps are targets of the same action all the same; `env.GpuDumps(objects)` returns them.
    """
    nodes = env["MLIRGPU_BUILDER"](env, target, source, **overrides)
    return [node for node in nodes if node.get_executor().get_all_targets()[0] is node]


def _include_for_users(env, header):
    """The generated header's folder on the include path of the environment that declared the object (added,
    never replacing the user's), so `#include "k.h"` in a C file built beside it is found and the C scanner
    orders the compile after the header also under VariantDir(duplicate=0) and `-Y`, where the C file is read
    from the source tree and the header is written in the build folder."""
    subject = env.__dict__.get("__subject", env)  # an OverrideEnvironment (GpuObject(..., GPU_CHIP=...)): its base
    subject.AppendUnique(CPPPATH=[header.dir])


def _gpu_dumps(env, nodes):
    """The dump files declared for the GPU objects among `nodes`, or among what they are built from: a Program
    or library made from .mlir sources has no object handle of its own (`env.GpuDumps(program)`)."""
    dumps, seen, pending = [], set(), list(SCons.Util.flatten([nodes]))
    while pending:
        node = pending.pop(0)
        if id(node) in seen or not node.has_builder():
            continue
        seen.add(id(node))
        if hasattr(node.attributes, "mlirgpu_paths"):  # one of ours (set by the emitter)
            dumps += [t for t in node.get_executor().get_all_targets()[1:] if not str(t).endswith(".h")]
        else:
            pending += list(node.sources)
    return dumps


def add_variables(variables):
    """Add every GPU_* variable (and DUMP) to a project's own `Variables`, so its `UnknownVariables()` check
    stays quiet about them and `scons -h` lists them with the project's (`mlirgpu.add_variables(opts)`).

    Without defaults: `Variables.Update` then writes only what the command line gives, never a default that the
    tool would read as the build file's own setting (an empty GPU_HEADER means "no header")."""
    for variable in make_variables(args={}).options:
        shown = "" if variable.default in ("", None) else f" (default: {variable.default})"
        variables.Add([variable.key] + list(variable.aliases), variable.help + shown, None, variable.validator,
                      variable.converter)
    return variables


_HELP_ADDED = []


def generate(env):
    errors.set_style("scons")
    try:
        mlir_tools = [toolchain.llvm_tool(name, search_environment(env)) for name in ("mlir-opt", "mlir-translate")]
    except CompileError as exc:
        raise SCons.Errors.StopError(str(exc)) from None
    if _will_build() and not toolchain.identities_known(mlir_tools, llvmlite=True):
        # Every signature holds these identities: computed now, while SCons reads the build files. The first
        # build on a machine (or with a new cache folder) hashes a few hundred megabytes of them.
        threading.Thread(target=toolchain.identities, args=(mlir_tools, True), daemon=True).start()
    values = _COMMAND_LINE.load()
    for name, value in values.items():
        env[name] = value  # visible to the build files; `setting` keeps the command line first regardless
    env["MLIRGPU_VARIABLES"] = _COMMAND_LINE.variables  # for Help(...) and UnknownVariables()
    if not _HELP_ADDED and SCons.Script.GetOption("help"):
        shown = SCons.Environment.Base(tools=[])
        for variable in _COMMAND_LINE.variables.options:
            shown[variable.key] = setting(env, variable.key)  # what this build uses
        SCons.Script.Help(_COMMAND_LINE.variables.GenerateHelpText(shown), append=True)
        _HELP_ADDED.append(True)
    env.SetDefault(MLIRGPUCOMSTR="", OBJSUFFIX=".o")
    _SESSION.start()
    use_cache_file(env.File("#.sconsign.mlirgpu.json").abspath)  # scans of the sources, kept across runs
    action = _CompileAction(_compile, {"strfunction": _describe})
    builder = SCons.Builder.Builder(action=action, emitter=_static_emitter, src_suffix=".mlir", suffix="$OBJSUFFIX",
                                    single_source=True, source_scanner=LIBRARY_SCANNER)
    env["MLIRGPU_BUILDER"] = builder
    env.AddMethod(_gpu_object, "GpuObject")
    env.AddMethod(_gpu_dumps, "GpuDumps")
    env.AddMethod(setting, "GpuSetting")  # the value the tool uses (command line first), for the build files
    # `.mlir` files are also plain sources of Object/SharedObject and so of every library and program builder.
    static, shared = SCons.Tool.createObjBuilders(env)
    static.add_action(".mlir", action)
    static.add_emitter(".mlir", _static_emitter)
    shared.add_action(".mlir", action)
    shared.add_emitter(".mlir", _shared_emitter)
    SCons.Tool.SourceFileScanner.add_scanner(".mlir", LIBRARY_SCANNER)


def exists(env):
    try:
        return bool(toolchain.llvm_tool("mlir-opt", search_environment(env)))
    except CompileError:
        return False
