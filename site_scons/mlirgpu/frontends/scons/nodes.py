"""Which files and folders an object's nodes stand for: the file SCons reads for a source or library node (in
place, under VariantDir, from a repository), the nodes GPU_* variables name, and an object's header and dump
folder. Every path-valued GPU_* variable goes through `variable_node`: a path given on the command line is
relative to the top folder (`#`, where `scons` runs), whatever SConscript declares the object that reads it; one
set in a build file is relative to that SConscript (`#` for the top folder), except GPU_SUBSTITUTE and GPU_TRACE,
which name one folder or file for the whole build, relative to the top folder wherever they are set.
GPU_DUMPDIR given on the command line is a root below which each object gets its own folder.
"""
import os

import SCons.Errors

from .variables import COMMAND_LINE, setting


def object_paths(env, obj):
    """(header node or None, dump folder node) of an object: GPU_HEADER / GPU_DUMPDIR as set (relative to the
    SConscript that set them), or beside the object: `k.h` / `k.dumps` for a static object `k.o`,
    `k.shared.h` / `k.shared.dumps` for a shared one (so one source can feed both)."""
    base = os.path.splitext(obj.name)[0] + (".shared" if getattr(obj.attributes, "shared", False) else "")
    header = setting(env, "GPU_HEADER")
    if header is None:
        header_node = obj.dir.File(base + ".h")
    else:
        header = env.subst(str(header), target=[obj]) if "$" in str(header) else str(header)
        header_node = variable_node(env, "GPU_HEADER", header) if header else None
    folder = setting(env, "GPU_DUMPDIR")
    if folder is None or folder == "":
        dump_dir = obj.dir.Dir(base + ".dumps")
    elif "GPU_DUMPDIR" in COMMAND_LINE.load():  # a root for every object: one folder per object below it
        below = os.path.normpath(os.path.join(top_relative(str(folder)), obj.dir.get_path(env.Dir("#")), base))
        dump_dir = path_node(env, "GPU_DUMPDIR", below, folder=True)
    else:
        folder = env.subst(str(folder), target=[obj]) if "$" in str(folder) else str(folder)
        dump_dir = variable_node(env, "GPU_DUMPDIR", folder, folder=True)
    return header_node, dump_dir


def source_path(node, absolute=False):
    """The file to read for a source or library node: where SCons itself reads it (see read_node).

    Actions run from the top directory, so they use (path-independent) relative paths; emitters run while an
    SConscript is read, from its own directory, so they use absolute ones. A file in a repository outside the top
    folder has an absolute path either way.
    """
    node = read_node(node)
    return node.abspath if absolute else node.path


def read_node(node):
    """The node whose file SCons reads for `node` (its actions get `node.rfile()`): the node itself when its file
    is there or is built by this build; else its source-tree original under VariantDir (duplicate=0 reads it
    there, duplicate=1 copies it only when it builds, after the build files are read), or a repository's copy
    (`scons -Y`, `Repository()`). The emitter, scanner, signature and action all read the same file."""
    if node.is_derived() or os.path.exists(node.abspath):
        return node
    source = node.srcnode()
    return source.rfile() if source is not node else node.rfile()


def read_dir(folder):
    """A folder's counterpart of read_node: the local folder when it is there, else a repository's."""
    if os.path.isdir(folder.abspath):
        return folder
    source = folder.srcnode()
    return source.rdir() if source is not folder else folder.rdir()


def substitute_dir(env, value):
    """GPU_SUBSTITUTE's folder (relative to the top folder wherever it is set)."""
    return variable_node(env, "GPU_SUBSTITUTE", value, folder=True)


def top_file(env, value):
    """GPU_TRACE's file (relative to the top folder wherever it is set)."""
    return variable_node(env, "GPU_TRACE", value)


BUILD_WIDE = ("GPU_SUBSTITUTE", "GPU_TRACE")  # one folder or file for the whole build: from the top folder always


def variable_node(env, variable, path, folder=False):
    """The node of the file (or folder) `path` that GPU_* `variable` names, from its base: the top folder for a
    value given on the command line (`scons GPU_BASELINE=old/gpu-manifest.json` means the same file whichever
    SConscript declares the first object, under VariantDir too) and for the build-wide BUILD_WIDE ones; else the
    SConscript that set it, as SCons reads any path (`#` for the top folder)."""
    path = str(path)
    if variable in BUILD_WIDE or variable in COMMAND_LINE.load():
        path = top_relative(path)
    return path_node(env, variable, path, folder)


def top_relative(path):
    """`path` as SCons names it from the top folder: `#path`, unless absolute or already so."""
    return path if os.path.isabs(path) or path.startswith("#") else "#" + path


def path_node(env, variable, path, folder=False):
    """The node of the file (or folder) a GPU_* variable names. SCons refuses a folder where a file is meant, and
    the reverse, with a traceback; here that stops the build with one line naming the variable (the emitter asks
    for each of these nodes first, while SCons reads the build files)."""
    try:
        return env.Dir(path) if folder else env.File(path)
    except TypeError as exc:  # SCons: "Directory /x found where file expected." (or the reverse)
        raise SCons.Errors.StopError(f"{variable}={path.lstrip('#')}: {str(exc).rstrip('.')} (fix: name a "
                                     f"{'folder' if folder else 'file'} in {variable})") from None

