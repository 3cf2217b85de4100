"""Compile options: one definition of each (type, allowed values, help, CLI flag, SCons variable), used by the
CLI, the SCons tool and the Python API alike, named as upstream's `gpu-module-to-binary` options where they exist.

Every value is checked before anything runs (`validate`, by pipeline.planning.check_options, which each front end
calls once and which makes the `CheckedOptions` the pipeline takes): a value that could change a pass pipeline, break
out of an LLVM IR string, a C header or a file name, or that no compile can use, is an error naming the option
in the caller's language (`--chip` for the CLI, `GPU_CHIP` for SCons, `chip=` for the API; see `hint`).
"""
import re
from dataclasses import dataclass, fields, replace

from . import errors
from .util.cmdline import option_words, unclosed_quote

FORMATS = ("isa", "bin", "fatbin")
LAYOUTS = ("plain", "vendor")
HOST_CODE = ("compile", "ignore")
EMITS = ("object", "library")  # what a compile makes: a host object, or device-function libraries (bitcode)
MAX_CHIPS = 64  # more chips than any GPU family has: a runaway list is a mistake
RESERVED_SECTIONS = ("mlirgpu_registry",)  # our own registry: binaries placed there would corrupt it
NOBITS_SECTIONS = re.compile(r"\.(?:t|s)?bss(?:\..*)?")  # sections without file contents cannot hold a binary


@dataclass(frozen=True)
class CompileOptions:
    format: str = "fatbin"  # upstream's default
    section: str = ""  # ELF section of the embedded binaries; '' means .rodata
    toolkit: str = ""  # CUDA or ROCm root (else found from the environment)
    link_libs: tuple = ()  # -l bitcode libraries, linked before the target's own
    opts: str = ""  # extra options for the binary tool (ptxas), split as upstream splits them
    dump_dir: str = ""  # --dump-intermediates
    target: str = ""  # a registered target, for modules that carry no target
    chip: str = ""  # comma-separated
    features: str = ""
    opt_level: int = None
    layout: str = "plain"  # plain: --section or .rodata; vendor: .nv_fatbin / .hip_fatbin with wrappers
    header: str = ""  # write the object's C header here
    symbol_prefix: str = ""  # prepended to every C symbol (two objects with the same module names)
    host_code: str = "compile"  # compile: keep MLIR's launch glue for host code; ignore: embed the binaries only
    dump_prefix: str = ""  # prepended to every dump file name (flat output folders, e.g. Meson's)
    depfile: str = ""  # write a Make-style depfile (source, libraries, tools) here
    lowering: str = ""  # an mlir-opt pass pipeline for target-neutral modules instead of the built-in one
    substitute: str = ""  # a folder of hand-edited stage outputs named like the dumps: each replaces its stage's output
    emit: str = "object"  # object: the host object; library: one bitcode library per target (and chip) to link


@dataclass(frozen=True)
class CheckedOptions(CompileOptions):
    """Compile options checked and resolved at a front end's boundary (pipeline.planning.check_options makes
    them): the only options the pipeline takes, so a compile's options are checked once and nothing the check
    did not see runs. `dataclasses.replace` keeps the type, for a front end that drops what it checked (a
    build without dumps)."""


@dataclass(frozen=True)
class Option:
    """One compile option as every front end sees it."""

    name: str  # the CompileOptions field (and the Python API keyword)
    flag: str  # the CLI flag
    variable: str  # the SCons construction variable ('' where SCons sets it itself)
    help: str
    choices: tuple = None  # allowed values, when they are a fixed set
    metavar: str = None
    cmake: str = ""  # how the CMake package's user sets it ({} the value; '' where only OPTIONS can)
    meson: str = ""  # the Meson recipe's option for it (examples/meson; '' where its command line says the flag)


OPTIONS = (
    Option("target", "--target", "GPU_TARGET", "target of gpu.modules that carry none (they are lowered first)",
           metavar="TARGET", cmake="-DGPU_TARGET={}", meson="-Dgpu_target={}"),
    Option("chip", "--chip", "GPU_CHIP", "chip, or chips separated by commas, for those modules (default: the "
           "oldest the toolchain accepts)", metavar="CHIP[,CHIP]", cmake="-DGPU_CHIP={}", meson="-Dgpu_chip={}"),
    Option("features", "--features", "GPU_FEATURES", "LLVM target features for those modules, e.g. +ptx80",
           metavar="F", cmake="-DGPU_FEATURES={}"),
    Option("opt_level", "-O", "GPU_OPT_LEVEL", "optimization level of those modules (default: the target's, 2)",
           choices=("0", "1", "2", "3"), metavar="N", cmake="-DGPU_OPT_LEVEL={}"),
    Option("format", "--format", "GPU_FORMAT", "what is embedded: ISA text, the binary, or a fat binary",
           choices=FORMATS, cmake="-DGPU_FORMAT={}"),
    Option("section", "--section", "GPU_SECTION", "ELF section of the embedded binaries (default .rodata)",
           metavar="NAME", cmake="SECTION {}"),
    Option("layout", "--layout", "GPU_LAYOUT", "plain, or vendor: the sections cuobjdump and HIP tools read",
           choices=LAYOUTS, cmake="LAYOUT {}"),
    Option("toolkit", "--toolkit", "GPU_TOOLKIT", "CUDA or ROCm root (default: found from the environment)",
           metavar="DIR", cmake="-DGPU_TOOLKIT={}"),
    Option("link_libs", "-l", "GPU_LINKLIBS", "bitcode library linked before the target's own (repeatable)",
           metavar="LIB.bc", cmake="LINK_LIBS {}"),
    Option("opts", "--opts", "GPU_OPTS", "extra options for the binary tool (ptxas), split as upstream splits "
           "them", metavar="OPTIONS"),
    Option("dump_dir", "--dump-intermediates", "GPU_DUMPDIR", "write every stage's output into this folder",
           metavar="DIR", cmake="-DMLIRGPU_DUMP=ON"),
    Option("dump_prefix", "--dump-prefix", "", "prefix of every dump file name (flat output folders)",
           metavar="PREFIX"),
    Option("header", "--header", "GPU_HEADER", "write a C header declaring the object's symbols",
           metavar="FILE.h"),
    Option("symbol_prefix", "--symbol-prefix", "GPU_SYMBOL_PREFIX", "prefix of every C symbol of the object",
           metavar="PREFIX"),
    Option("host_code", "--host-code", "GPU_HOST_CODE", "host code launching kernels: keep MLIR's launch glue, "
           "or embed only the binaries", choices=HOST_CODE),
    Option("depfile", "--depfile", "", "write a Make-style depfile: source, libraries, device libraries, tools",
           metavar="FILE.d"),
    Option("lowering", "--lowering", "GPU_LOWERING", "mlir-opt pass pipeline for target-neutral modules instead "
           "of the built-in lowering", metavar="PIPELINE", cmake="-DGPU_LOWERING={}"),
    Option("substitute", "--substitute", "GPU_SUBSTITUTE", "a folder of hand-edited stage outputs named like the "
           "dumps (k.opt.ll, k.isa, k.cubin...): each replaces that stage's output, and the later stages run from it",
           metavar="DIR"),
    Option("emit", "--emit", "", "what to make: the host object, or a device-function library (one LLVM bitcode "
           "file per target and chip, -o naming its prefix) that kernels elsewhere link with -l", choices=EMITS),
)
BY_NAME = {option.name: option for option in OPTIONS}
errors.know_options({option.name: (option.flag, option.variable, option.cmake, option.meson) for option in OPTIONS})


def hint(name, value=None):
    """A mention of an option (with a value, or a tuple of values to choose from) in a message or fix, which each
    front end renders in its own terms (see errors.render_hints). Markers, not text, delimit it, so any value
    survives."""
    if isinstance(value, tuple):
        value = errors.ALTERNATIVES.join(map(str, value))
    return "\x1eoption:" + name + ("" if value is None else "\x1f" + str(value)) + "\x1e"


def _problem(option, value, why):
    return errors.CompileError(f"invalid {option} '{_shown(value)}': {why}")


def _shown(value):
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


_CHIP = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}")
_FEATURE = re.compile(r"[+-][A-Za-z0-9_.\-]{1,63}")
_SECTION = re.compile(r"[A-Za-z0-9_.$][A-Za-z0-9_.$\-]{0,199}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_FILE_PREFIX = re.compile(r"[A-Za-z0-9_+\-][A-Za-z0-9_.+\-]{0,99}")


def parse_opt_level(value):
    """An O level from text: ASCII digits 0-3 only (int() would also take other scripts' digits)."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    text = str(value).strip()
    if text in ("0", "1", "2", "3"):
        return int(text)
    raise _problem("optimization level", value, "use 0, 1, 2 or 3").with_fix(hint("opt_level", 2))


def validate(options, known_targets=()):
    """`options` checked and normalised (O level as int, chips without blanks); raises CompileError.

    A pure function of its arguments, so checked options are remembered: a build tool checks each object's
    options several times (declaring it, scanning it, signing it), and every object of a build has the same
    settings but its own paths."""
    known_targets = tuple(known_targets)
    try:
        key = _checked_key(options, known_targets)
        checked = _CHECKED.get(key)
    except TypeError:  # an unhashable value (a list where a tuple belongs): checked, not remembered
        return _validate(options, known_targets)
    if checked is None:
        checked = _validate(options, known_targets)
        if len(_CHECKED) >= _CHECKED_LIMIT:
            _CHECKED.clear()
        _CHECKED[key] = _CHECKED[_checked_key(checked, known_targets)] = checked  # checked stays as it is
    return checked


def _checked_key(options, known_targets):
    """The values with their types: 1 == True == 1.0 in Python, but only 1 is an O level."""
    values = tuple(options.__dict__.values())
    return values, tuple(map(type, values)), known_targets


_CHECKED = {}
_CHECKED_LIMIT = 4096


def _validate(options, known_targets):
    def fail(name, value, why, example=None):
        label = {"opt_level": "optimization level", "dump_prefix": "dump prefix", "symbol_prefix": "symbol prefix",
                 "host_code": "host code mode", "link_libs": "library"}.get(name, name)
        error = _problem(label, value, why)
        raise error.with_fix(f"use {hint(name, example)}" if example is not None else why)

    for option in OPTIONS:
        value = getattr(options, option.name)
        if isinstance(value, str) and ("\0" in value or "\n" in value or "\r" in value):
            fail(option.name, value, "no NUL or line breaks allowed")
    for name, allowed in (("format", FORMATS), ("layout", LAYOUTS), ("host_code", HOST_CODE), ("emit", EMITS),
                          ("target", ("",) + tuple(known_targets))):
        value = getattr(options, name)
        if value not in allowed:
            raise errors.CompileError(f"unknown {BY_NAME[name].name.replace('_', ' ')} '{_shown(value)}'").with_fix(
                "use " + " or ".join(hint(name, choice) for choice in allowed if choice))
    level = parse_opt_level(options.opt_level)
    chips = [chip.strip() for chip in options.chip.split(",")] if options.chip.strip() else []
    if len(chips) > MAX_CHIPS:
        fail("chip", f"{len(chips)} chips", f"at most {MAX_CHIPS} chips per compile")
    for chip in chips:
        if not _CHIP.fullmatch(chip):
            fail("chip", chip, "a chip is a name such as sm_90 or gfx942 (letters, digits, '_', '.', '-')",
                 "sm_90")
    if len(set(chips)) != len(chips):
        fail("chip", options.chip, "a chip is listed twice")
    features = [item for item in options.features.split(",")] if options.features else []
    for feature in features:
        if not _FEATURE.fullmatch(feature):
            fail("features", options.features, "features are +name or -name, separated by commas", "+ptx80")
    if options.section and not _SECTION.fullmatch(options.section):
        fail("section", options.section, "an ELF section name of letters, digits and _ . $ - (at most 200)",
             "gpu_binaries")
    if options.section in RESERVED_SECTIONS:
        fail("section", options.section, "that section holds the registry of binaries", "gpu_binaries")
    if NOBITS_SECTIONS.fullmatch(options.section):
        fail("section", options.section, "a .bss section holds no data", "gpu_binaries")
    if options.symbol_prefix and not _IDENTIFIER.fullmatch(options.symbol_prefix):
        fail("symbol_prefix", options.symbol_prefix, "a prefix of C identifiers: letters, digits and '_', not "
             "starting with a digit", "mylib_")
    if options.dump_prefix and not _FILE_PREFIX.fullmatch(options.dump_prefix):
        fail("dump_prefix", options.dump_prefix, "a file-name prefix of letters, digits and _ . + - (no folders)",
             "kernel_")
    if unclosed_quote(options.opts):
        fail("opts", options.opts, "a quote is not closed")
    return replace(options, opt_level=level, chip=",".join(chips), link_libs=tuple(options.link_libs))


def field_names():
    return [field.name for field in fields(CompileOptions)]


def to_argv(options):
    """The `mlirgpu compile` arguments that give `options` (the format always, other options when set; a value
    starting with `-` joined to its flag, so it is not read as an option)."""
    defaults = CompileOptions()
    argv = []
    for option in OPTIONS:
        value = getattr(options, option.name)
        if option.name != "format" and (value == getattr(defaults, option.name) or value in ("", None, ())):
            continue
        if option.name == "link_libs":
            for library in value:
                argv += option_words(option.flag, library)
        else:
            argv += option_words(option.flag, str(value))
    return argv
