"""What an object declares: the emitter gives the header and, with GPU_DUMP, every dump (read from the source by
mlirgpu.pipeline.scan) as targets of the compile, so SCons rebuilds, cleans and caches them (a library's files
are declared the same way: mlirgpu.frontends.scons.library); a scanner makes
the device libraries a compile may link its dependencies; `env.GpuObject` and `env.GpuDumps` are the builder's
faces. While it declares, the emitter names each source that looks out of date to the build session.
"""
import os

import SCons.Errors
import SCons.Node
import SCons.Scanner
import SCons.Script
from SCons.Script.SConscript import call_stack as _READING  # the build files being read
import SCons.Util

from ...errors import CompileError
from ...pipeline.record import read_listed_dumps
from ...pipeline.planning import RECORD_DUMP
from ...pipeline.scan import planned_outputs, predicted_libraries, tools_run
from .artifacts import ARTIFACTS
from .nodes import object_paths, source_path, substitute_dir, top_file, variable_node
from .options import building, env_options, executor, object_options, remote_cache, search_environment
from .session import SESSION, will_build
from .variables import as_bool, as_list, setting, text


def _emitter(target, source, env, shared=False):
    obj = target[0]
    obj.attributes.shared = 1 if shared else False
    obj.attributes.mlirgpu_libs = link_nodes(env)  # resolved here, relative to the SConscript naming them
    header, dump_dir = obj.attributes.mlirgpu_paths = object_paths(env, obj)
    if header:
        _include_for_users(env, header)
    return declared(env, [obj], [header] if header else [], dump_dir, source) + target[1:], source


def link_nodes(env):
    """GPU_LINKLIBS as nodes: a node (what `env.GpuLibrary` returns) as it is, a name from its base (the
    SConscript that names it, `#` for the top folder; the top folder on the command line: nodes.variable_node)."""
    value = setting(env, "GPU_LINKLIBS")
    items = SCons.Util.flatten([value]) if SCons.Util.is_List(value) or isinstance(value, SCons.Node.Node) \
        else as_list(value)
    return [item if isinstance(item, SCons.Node.Node) else variable_node(env, "GPU_LINKLIBS", str(item))
            for item in items if str(item)]


def declared(env, outputs, extra, dump_dir, source):
    """Every target of a compile whose outputs are `outputs` (the object, or a library's bitcode files), with
    `extra` (the header) and, with GPU_DUMP, its dumps; the first output's libraries are dependencies, its
    dump folder is its own, and a source that looks out of date is named to the build session."""
    obj = outputs[0]
    obj.attributes.mlirgpu_declared_in = _READING[-1].sconscript if _READING else None  # for errors about it
    if obj.attributes.mlirgpu_libs:
        env.Depends(outputs, obj.attributes.mlirgpu_libs)
    if text(env, "GPU_TRACE"):
        top_file(env, text(env, "GPU_TRACE"))  # a folder there stops the build now, not when it ends
    extra = list(extra)
    _forget_stale_dumps(env, obj, dump_dir)
    try:
        options = object_options(env, [obj], source)
    except CompileError:
        options = None  # the action reports it (read time is not where one object's error should stop a build)
    if options is not None and options.substitute:
        _depend_on_substitutes(env, obj, source, options)
    if as_bool(setting(env, "GPU_DUMP")):
        readable = os.path.isfile(source_path(source[0], absolute=True))
        # A source another builder makes does not exist yet: its dumps are declared from the next build on.
        obj.attributes.mlirgpu_unplanned = not readable
        if options is not None and readable:
            extra += [dump_dir.File(name) for name in planned_outputs(source_path(source[0], absolute=True), options)]
        record = dump_dir.File(RECORD_DUMP)
        record.set_precious()  # SCons keeps it until the compile has read which dumps it lists (action.py)
        ARTIFACTS.add(env, outputs + extra, record)  # objects and libraries alike
    elif "gpu-artifacts" in SCons.Script.COMMAND_LINE_TARGETS:
        raise SCons.Errors.UserError("gpu-artifacts collects the intermediates: build with DUMP=1")
    _claim(dump_dir, obj)
    try:
        remote = executor(env)
    except CompileError:
        remote = ""  # the action reports it, as it reports any other setting's error
    if not remote:  # compiles sent to a cluster need no local translations or workers
        _expect(env, source[0], outputs + extra, options)
    return outputs + extra


def _expect(env, source, targets, options):
    """A source that looks out of date is named to the build session while SCons still reads the build files,
    so its workers start and its translation is made meanwhile (see mlirgpu.execution.compiles.BuildSession)."""
    path = source_path(source, absolute=True)
    if will_build() and _looks_stale(path, targets):
        SESSION.expect(path, remote_cache=bool(remote_cache(env)), tools=tools_run(path, options))


def _depend_on_substitutes(env, obj, source, options):
    """The substitutes of this object's jobs, as dependencies: editing one rebuilds, and so does adding or
    removing one (the list of present names is a dependency too). Looked up as entries first: a folder named like
    a dump is no File node (the compile says what it is)."""
    folder = substitute_dir(env, options.substitute)
    names = planned_outputs(source_path(source[0], absolute=True), options)
    present = [folder.File(node.name) for node in map(folder.Entry, names)
               if os.path.isfile(source_path(node, absolute=True))]
    env.Depends(obj, present + [env.Value("mlirgpu substitutes: " + ",".join(sorted(node.name for node in present)))])


def static_emitter(target, source, env):
    return _emitter(target, source, env, shared=False)


def shared_emitter(target, source, env):
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
    if not os.path.isfile(source_path(node, absolute=True)):
        return []
    building()
    try:
        if path and hasattr(path[0].attributes, "mlirgpu_paths"):
            options = object_options(env, list(path), [node])
        else:
            options = env_options(env, [], [node])
    except CompileError:
        return []
    environment = search_environment(env)
    found = predicted_libraries(source_path(node, absolute=True), options, environment)
    return [env.fs.File(path, env.fs.Top) for path in found]  # relative ones to the top folder, where actions run


def _scanned_object(env, folder, target, source):
    """The scanner's `path` argument: the object the scan is for. SCons gives a scanner function only the source,
    the environment and this value, which it computes from the targets with this function."""
    return tuple(target[:1]) if target else ()


LIBRARY_SCANNER = SCons.Scanner.Base(_library_scanner, name="mlirgpu-libraries", skeys=[".mlir"],
                                     path_function=_scanned_object)


def gpu_object(env, target=None, source=None, **overrides):
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


def gpu_dumps(env, nodes):
    """The dump files declared for the GPU objects among `nodes`, or among what they are built from: a Program
    or library made from .mlir sources has no object handle of its own (`env.GpuDumps(program)`)."""
    dumps, seen, pending = [], set(), list(SCons.Util.flatten([nodes]))
    while pending:
        node = pending.pop(0)
        if id(node) in seen or not node.has_builder():
            continue
        seen.add(id(node))
        if hasattr(node.attributes, "mlirgpu_paths"):  # one of ours (set by the emitter): its outputs come first
            outputs = getattr(node.attributes, "mlirgpu_outputs", 1)
            dumps += [t for t in node.get_executor().get_all_targets()[outputs:] if not str(t).endswith(".h")]
        else:
            pending += list(node.sources)
    return dumps


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

