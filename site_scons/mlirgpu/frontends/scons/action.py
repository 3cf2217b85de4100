"""The compile action: its signature (every setting that shapes the output, and the identity, version and
bytes, of each tool and of llvmlite for the toolkit the object uses), the compile itself, run by the build
session, and the `mlirgpu compile` command line SCons echoes for it. Compiler warnings are printed as compilers
print them (`file.mlir:LINE: warning: ...`); GPU_WARNINGS=none hides them, GPU_WARNINGS=error fails the target.
"""
import dataclasses
import hashlib
import os
import shlex
import sys

import SCons.Action
import SCons.Errors

from ...compile_options import OPTIONS, to_argv
from ...errors import CompileError
from ...pipeline.dumps import remove_stale_dumps
from ...pipeline.planning import tool_identities
from ...pipeline.scan import planned_outputs, uses_build_target
from ...util.cmdline import option_words
from .nodes import source_path, substitute_dir, top_file
from .options import (building, changed_since_declared, executor, object_options, remembering, search_environment,
                      worker_environment)
from .session import SESSION
from .variables import as_bool, setting, text


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
    try:
        options = object_options(env, target, source)
    except CompileError as exc:
        return f"invalid: {exc}"
    node = source[0].get() if hasattr(source[0], "get") else source[0]  # signatures see node proxies
    lowering = uses_build_target(source_path(node, absolute=True))
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
        named["substitute"] = substitute_dir(env, text(env, "GPU_SUBSTITUTE", target, source)).path
    return named


class _CompileAction(SCons.Action.FunctionAction):
    """The compile action, whose signature is the function's code plus `_signature`, computed directly (SCons
    recomputes an action's signature for each target of an object and for every object of a null build)."""

    def get_presig(self, target, source, env, executor=None):
        """The hash of the function's code and `_signature` (some kilobytes), which SCons hashes again twice
        for each target of an object in every build. Once SCons builds, the object's settings are final, and
        it asks for this eleven times per object of a build with dumps: remembered on the object's node."""
        building()
        remembered = getattr(target[0].attributes, "mlirgpu_presig", None) if target else None
        if remembered is not None and remembered[0] is env:
            return remembered[1]
        contents = self.funccontents + _signature(target, source, env).encode("utf-8")
        presig = hashlib.sha256(contents).hexdigest().encode("ascii")
        if target and remembering():
            target[0].attributes.mlirgpu_presig = (env, presig)
        return presig

    def genstring(self, target, source, env, executor=None):
        """The action as SCons records it (`--debug=explain` shows the old and new ones): the command line,
        so a changed setting is named."""
        return _command_line(target, source, env)


def compile_action():
    """A new compile action, for one environment the tool is loaded into."""
    return _CompileAction(compile_object, {"strfunction": _describe})


def compile_object(target, source, env):
    """The compile action: the object, its header and its dumps, and no file it declared before and does not
    now; warnings said as GPU_WARNINGS asks, and the dumps written checked against those declared."""
    obj = target[0]
    _, dump_dir = obj.attributes.mlirgpu_paths
    declared = {node.abspath for node in target}
    # What the last compile wrote and this one won't (the record is precious: SCons kept it for this).
    remove_stale_dumps(dump_dir.abspath, {os.path.basename(path) for path in declared
                                          if os.path.dirname(path) == dump_dir.abspath})
    path = source_path(source[0])
    try:
        options = object_options(env, target, source)
        if not as_bool(setting(env, "GPU_DUMP")):
            options = dataclasses.replace(options, dump_dir="")
        else:
            _check_declared_dumps(env, target, source, options)
        trace = text(env, "GPU_TRACE")
        result = SESSION.compile(path, output_path(obj), options, worker_environment(env), executor(env),
                                 trace=top_file(env, trace).abspath if trace else "")
    except CompileError as exc:
        raise SCons.Errors.BuildError(node=obj, errstr=str(exc), exitstatus=1) from None
    finally:
        SESSION.done(path)
    mode = text(env, "GPU_WARNINGS")
    for warning in result.cache_warnings:  # the cache's, never the build's fault
        sys.stderr.write(f"mlirgpu: {warning}\n")
    if mode != "none":
        for warning in result.warnings:
            sys.stderr.write(f"{warning}\n")
        if mode == "error" and result.warnings:
            raise SCons.Errors.BuildError(node=obj, exitstatus=1,
                                          errstr=f"{len(result.warnings)} warning(s) and GPU_WARNINGS=error")
    declared = sorted(os.path.normpath(node.path) for node in target[getattr(obj.attributes, "mlirgpu_outputs", 1):]
                      if node.path != options.header)
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


def _check_declared_dumps(env, target, source, options):
    """Stop before compiling where a build file changed a GPU_* variable after declaring the object and the
    dumps the compile would write are no longer those declared as its targets (SCons takes no new targets once
    it builds): the error names each variable and the fix, and nothing is written."""
    obj = target[0]
    changed = changed_since_declared(env, obj)
    if not changed or getattr(obj.attributes, "mlirgpu_unplanned", False):
        return
    dump_dir = obj.attributes.mlirgpu_paths[1]
    declared = {os.path.normpath(node.path) for node in target[getattr(obj.attributes, "mlirgpu_outputs", 1):]
                if node.path != options.header}
    planned = {os.path.normpath(os.path.join(dump_dir.path, name))
               for name in planned_outputs(source_path(source[0], absolute=True), options)}
    if planned == declared:
        return
    values = ", ".join(f"{name} was changed from {then!r} to {now!r}" for name, then, now in changed)
    first = changed[0][0]
    where = getattr(obj.attributes, "mlirgpu_declared_in", None)
    raise CompileError(f"{values} after {obj.path} was declared with dumps (from {source[0]}): the "
                       "dumps declared as its targets follow the values then",
                       file=where.srcnode().path if where else source_path(source[0]),
                       fix=f"set {first} before the call that declares {obj.name}, or pass it to that call "
                           f"({first}={changed[0][2]!r})")


def output_path(obj):
    """What `-o` names for a compile whose first target is `obj`: the object, or a library's prefix (its files
    are `<prefix>.<target>[.<chip>].bc`)."""
    return getattr(obj.attributes, "mlirgpu_output", None) or obj.path


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
    path = source_path(source[0])
    words = option_words("-o", output_path(obj))
    try:
        options = object_options(env, target, source)
    except CompileError:
        options = None
    if options is not None:
        if not as_bool(setting(env, "GPU_DUMP")):
            options = dataclasses.replace(options, dump_dir="")
        words += to_argv(options)
    words = words + ["--", path] if path.startswith("-") else [path] + words
    line = shlex.join(["mlirgpu", "compile"] + words)
    if options is not None and remembering():
        obj.attributes.mlirgpu_command_line = line
    return line

