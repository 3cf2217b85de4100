"""The SCons tool's variables: every GPU_* construction variable, described once (mlirgpu.compile_options, plus
the build-only ones here) and listed by `scons -h`, and the value the tool uses for each (`setting`).

A value given on the command line (`scons GPU_FORMAT=bin`) wins over every value the build files set
(Environment keywords, Replace, builder overrides, SetDefault); those win over the tool's defaults, which are
never written into the environment (so `env.SetDefault(...)` after loading the tool works).
"""
import difflib
import sys

import SCons.Environment
import SCons.Script
import SCons.Util
import SCons.Variables

from ...compile_options import OPTIONS, CompileOptions
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
    ("GPU_ARTIFACTSDIR", "where `gpu-artifacts` writes the manifest, reports and archive (on the command line, "
     "like every path, relative to the top folder)", "#"),
    ("GPU_BASELINE", "an earlier gpu-manifest.json, its archive unpacked beside it: the reports show what changed "
     "and each changed ISA's diff", ""),
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


def as_list(value):
    """A list variable's value: a Python list, or text with commas and/or spaces (SCons list syntax)."""
    if SCons.Util.is_List(value):
        return [str(item) for item in SCons.Util.flatten(value) if str(item)]
    return [item for item in str(value or "").replace(",", " ").split() if item]


def as_bool(value):
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


COMMAND_LINE = _CommandLine()


def setting(env, name):
    """The value of GPU_* variable `name` for `env`: the command line's, else the build files', else the
    tool's default."""
    values = COMMAND_LINE.values if COMMAND_LINE.values is not None else COMMAND_LINE.load()
    if name in values:
        return values[name]
    value = env.get(name)
    return DEFAULTS.get(name) if value is None else value


def text(env, name, target=None, source=None):
    """`setting` as text, its $VARIABLES substituted for `target` and `source` (a list stays a list)."""
    value = setting(env, name)
    if SCons.Util.is_List(value):
        return value
    value = "" if value is None else str(value)
    return env.subst(value, target=target, source=source) if "$" in value else value


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



def publish(env):
    """The command line's GPU_* values set in `env` (visible to the build files; `setting` keeps the command line
    first regardless), its Variables as MLIRGPU_VARIABLES (for Help(...) and UnknownVariables()), and, for
    `scons -h`, their help with the values this build uses (once)."""
    values = COMMAND_LINE.load()
    for name, value in values.items():
        env[name] = value
    env["MLIRGPU_VARIABLES"] = COMMAND_LINE.variables
    if not _HELP_ADDED and SCons.Script.GetOption("help"):
        shown = SCons.Environment.Base(tools=[])
        for variable in COMMAND_LINE.variables.options:
            shown[variable.key] = setting(env, variable.key)
        SCons.Script.Help(COMMAND_LINE.variables.GenerateHelpText(shown), append=True)
        _HELP_ADDED.append(True)


_HELP_ADDED = []
