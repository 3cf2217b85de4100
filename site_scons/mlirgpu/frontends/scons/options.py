"""What each object compiles with: its compile options (from GPU_* variables and the nodes the emitter
resolved), the environment its compile runs in, where its tools are searched, its remote cache and its Dask
executor. Computed while SCons reads the build files (the emitter, which can still be told otherwise later),
then remembered per object once SCons builds (the scanner, the signature and the action ask again and again).
"""
import os

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
    """SCons builds now (its first scan or signature): from here on, settings are remembered."""
    _READ_DONE[:] = [True]


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
    header, dump_dir = getattr(obj.attributes, "mlirgpu_paths", None) or object_paths(env, obj)
    libs = [source_path(node) for node in getattr(obj.attributes, "mlirgpu_libs", [])]
    try:
        options = env_options(env, target, source, header=header.path if header else "", dump_dir=dump_dir.path,
                              link_libs=tuple(libs), emit=getattr(obj.attributes, "mlirgpu_emit", "object"))
    except CompileError as exc:
        options = exc
    if remembering():
        obj.attributes.mlirgpu_options = options
    if isinstance(options, CompileError):
        raise options
    return options


def env_options(env, target, source, **paths):
    """The compile options `env` gives (without the object's own paths unless given); raises CompileError."""
    values = {option.name: text(env, option.variable, target, source) for option in OPTIONS
              if option.variable and option.name not in ("chip", "link_libs", "header", "dump_dir")}
    values.update(chip=",".join(as_list(setting(env, "GPU_CHIP"))), opt_level=values["opt_level"] or None, **paths)
    if values["substitute"]:
        values["substitute"] = read_dir(substitute_dir(env, values["substitute"])).path
    return check_options(source_path(source[0]), CompileOptions(**values), search_environment(env))

