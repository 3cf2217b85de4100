"""What each object compiles with: its compile options (from GPU_* variables and the nodes the emitter
resolved), the environment its compile runs in, where its tools are searched, its remote cache and its Dask
executor. Computed while SCons reads the build files (the emitter, which can still be told otherwise later),
then remembered per object once SCons builds (the scanner, the signature and the action ask again and again).
"""
import gc
import os

import SCons.Util

from ...cache import remote as remotecache
from ...compile_options import OPTIONS, CompileOptions
from ...errors import CompileError
from ...execution import compiles
from ...llvm import toolchain
from ...pipeline.planning import check_options
from ...util import environment
from .nodes import object_paths, read_dir, source_path, substitute_dir
from .variables import as_bool, as_list, setting, text

_READ_DONE = []  # set once SCons builds: the build files can no longer change an object's settings


def building():
    """SCons builds now (its first scan or signature): from here on, settings are remembered. The first call
    also freezes what the build files made (gc.freeze): nodes, environments and builders live until the build
    ends, and each full collection of the build walked them all again (a null build of 1000 objects: about 4% of
    its instructions under callgrind went to collections)."""
    if not _READ_DONE:
        _READ_DONE.append(True)
        gc.freeze()


def remembering():
    """Whether SCons builds, so settings computed now are final."""
    return bool(_READ_DONE)


def search_environment(env):
    """Tool discovery reads the build's execution environment first (env['ENV']), then this process's.
    Remembered per execution environment once the build files are read (scan and signature ask each object)."""
    execution = env.get("ENV") or _NO_ENV
    if not remembering():
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
    if not as_bool(setting(env, "GPU_CACHE")):
        environ["MLIRGPU_CACHE"] = "off"
    if remote_cache(env):
        environ[remotecache.VARIABLE] = remote_cache(env)
    return environ


def remote_cache(env):
    """The remote cache an object's compiles use: GPU_REMOTE_CACHE, else $MLIRGPU_REMOTE_CACHE, or ''."""
    return str(setting(env, "GPU_REMOTE_CACHE") or environment.value(remotecache.VARIABLE)).strip()


def executor(env):
    """The Dask scheduler of this object's compiles (GPU_EXECUTOR, else $MLIRGPU_EXECUTOR), checked, or ''."""
    return compiles.cluster(text(env, "GPU_EXECUTOR") or environment.value("MLIRGPU_EXECUTOR"))


def object_options(env, target, source):
    """The compile options of an object (paths relative to the top folder, where actions run), resolved and
    checked; raises CompileError. Header, dump folder and libraries are the nodes the emitter resolved (relative
    to the SConscript that declared the object), and a library's (`env.GpuLibrary`) emit=library. Remembered
    per object once the build files are read."""
    obj = target[0]
    remembered = getattr(obj.attributes, "mlirgpu_options", None)
    if remembered is not None:
        if isinstance(remembered, CompileError):
            raise remembered
        return remembered
    settings = _settings(env)
    read = getattr(obj.attributes, "mlirgpu_read_options", None)
    if read is not None and settings is not None and read[0] == settings:
        options = read[1]  # the build files set nothing new for it after declaring it
    else:
        header, dump_dir = getattr(obj.attributes, "mlirgpu_paths", None) or object_paths(env, obj)
        libs = [source_path(node) for node in getattr(obj.attributes, "mlirgpu_libs", [])]
        try:
            options = env_options(env, target, source, header=header.path if header else "",
                                  dump_dir=dump_dir.path, link_libs=tuple(libs),
                                  emit=getattr(obj.attributes, "mlirgpu_emit", "object"))
        except CompileError as exc:
            options = exc
    if remembering():
        obj.attributes.mlirgpu_options = options
    elif settings is not None:
        obj.attributes.mlirgpu_read_options = (settings, options)
    if isinstance(options, CompileError):
        raise options
    return options


# The object's own paths (header, dump folder, libraries) are the nodes its emitter resolved: not read again.
_SETTINGS = tuple(option.variable for option in OPTIONS
                  if option.variable and option.name not in ("link_libs", "header", "dump_dir"))


def _settings(env):
    """What an object's options are made of besides its own paths: the GPU_* values and the tool search
    variables, compared between the read of the build files and the build, so options computed while SCons read
    them serve the build unless a later line changed one. None where a value substitutes $VARIABLES (what they
    expand to is not in this tuple): those options are computed again."""
    values = []
    for name in _SETTINGS:
        value = setting(env, name)
        if SCons.Util.is_List(value):
            value = tuple(str(item) for item in SCons.Util.flatten(value))
        else:
            value = "" if value is None else str(value)
            if "$" in value:
                return None
        values.append(value)
    return tuple(values), search_environment(env)


def changed_since_declared(env, obj):
    """[(variable, value then, value now)] of the GPU_* variables a build file changed after declaring `obj`
    (the emitter declared its dumps from the values then); [] where none did, or where a value substitutes
    $VARIABLES (not compared)."""
    read = getattr(obj.attributes, "mlirgpu_read_options", None)
    now = _settings(env)
    if read is None or now is None:
        return []
    return [(name, then, value) for name, then, value in zip(_SETTINGS, read[0][0], now[0]) if then != value]


def env_options(env, target, source, **paths):
    """The compile options `env` gives (without the object's own paths unless given); raises CompileError."""
    values = {option.name: text(env, option.variable, target, source) for option in OPTIONS
              if option.variable and option.name not in ("chip", "link_libs", "header", "dump_dir")}
    values.update(chip=",".join(as_list(setting(env, "GPU_CHIP"))), opt_level=values["opt_level"] or None, **paths)
    if values["substitute"]:
        values["substitute"] = read_dir(substitute_dir(env, values["substitute"])).path
    return check_options(source_path(source[0]), CompileOptions(**values), search_environment(env))

