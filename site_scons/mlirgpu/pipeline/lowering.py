"""The `--lowering` pipeline as a user pastes it from upstream: a pass pipeline (`gpu-lower-to-nvvm-pipeline{...}`,
`builtin.module(...)`) or a RUN line's mlir-opt flags (`-gpu-lower-to-nvvm-pipeline="cubin-format=fatbin"`).

A pipeline that ends in serialization (`gpu-module-to-binary`, as upstream's `gpu-lower-to-*-pipeline`s do) is
cut there, as mlir-opt itself expands it (`--dump-pass-pipeline`): the passes before it lower the file (and
attach the pipeline's target), we compile its modules stage by stage in its place, and the passes after it
finish the host code as upstream's full pipeline does. The target, chip, features and O level of the pipeline's
attach pass and the format and options of its serialization become the compile's, unless the build sets them.

Only passes and pass pipelines mlir-opt registers reach it (passtext, checked before the expansion): no plugin, no
flag that writes a file, whether the build is compiled or only planned.
"""
import functools
import os
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, replace

from ..llvm import mlirtools, process, toolchain
from . import passtext, pipelinefixes
from ..errors import CompileError
from ..compile_options import hint
from ..targets import TARGETS

SERIALIZE = "gpu-module-to-binary"
_FLAG = re.compile(r"-{1,2}([A-Za-z][\w.\-]*)(?:=(.*))?\Z", re.S)
_RUN_LINE_WORDS = ("mlir-opt", "%s")  # a pasted RUN line's tool and input, which name no pass
# gpu-module-to-binary's format names (MLIR 22's ModuleToBinary): ours for those we build, None for LLVM
# bitcode objects (`offload = ...`), which we do not embed.
_BINARY_FORMATS = {"isa": "isa", "assembly": "isa", "bin": "bin", "binary": "bin", "fatbin": "fatbin",
                   "fatbinary": "fatbin", "llvm": None, "offloading": None}


@dataclass(frozen=True)
class Pipeline:
    """A pipeline expanded by mlir-opt and cut at its serialization (`binary` is None when it has none)."""

    before: tuple  # top-level elements of builtin.module(...) up to the serialization
    binary: dict = None  # gpu-module-to-binary's options
    after: tuple = ()  # what follows it: the host code's last passes

    def attach(self):
        """(target, options, index) of the pipeline's attach pass (the first one), or None."""
        return next(iter(self.attaches()), None)

    def attaches(self):
        """(target, options, index) of each attach pass of the pipeline, in order."""
        return self._attaches

    @functools.cached_property
    def _attaches(self):
        """attaches(), read once per pipeline: a pipeline is expanded once per text and process, and every
        object's options, signature and command line ask (SCons: 2,000 element parses for 44 objects)."""
        by_pass = {target.lowering.attach_pass: target for target in TARGETS.values() if target.lowering.attach_pass}
        found = []
        for index, element in enumerate(self.before):
            name, values = passtext.element(element)
            if name in by_pass:
                found.append((by_pass[name], values, index))
        return tuple(found)


def canonical(text):
    """The pass-pipeline form of `text`: a pipeline as is; mlir-opt flags (`-name`, `-name="opts"`,
    `--name=opts`, `--pass-pipeline=X`, several of them, with `mlir-opt %s` before and `| ...` after as a RUN line
    has them, also a chain `mlir-opt %s -a | mlir-opt -b`) as the `name{opts}, ...` list they stand for (for
    messages: `expand` gives mlir-opt the flags)."""
    stages = _stages(text)
    if stages is None:
        return text.strip()
    passes = []
    for word in (word for stage in stages for word in stage):
        name, value = _FLAG.match(word).groups()
        if name == "pass-pipeline":
            passes.append(value or "")
        else:
            passes.append(f"{name}{{{value}}}" if value else name)
    return ", ".join(passes)


def _stages(text):
    """The mlir-opt pass flags `text` gives as a RUN line does, each one word, per mlir-opt of a chain
    (`mlir-opt %s -a | mlir-opt -b` runs -a, then -b); None for a pass pipeline."""
    stripped = text.strip()
    if not stripped.startswith(("-", "mlir-opt")):
        return None
    try:
        words = shlex.split(stripped)
    except ValueError as exc:
        raise CompileError(f"cannot read the lowering pipeline ({exc})",
                           fix="quote it as the RUN line does, e.g. "
                               f"{hint('lowering', 'gpu-lower-to-nvvm-pipeline{cubin-chip=sm_80}')}") from None
    stages, joined = [[]], []
    for word in words:  # the shell took a flag's quotes: `-p=a=1 b=2` arrives as one word, or as three
        if joined and "=" in joined[-1] and not word.startswith("-") and word not in _RUN_LINE_WORDS + ("|",):
            key, equals, value = word.partition("=")  # b='-x -y' (quoted inside the flag's quotes) came as b=-x -y
            joined[-1] += " " + (f"{key}{equals}'{value}'" if re.search(r"\s", value) else word)
        else:
            joined.append(word)
    for index, word in enumerate(joined):
        if word == "|" and joined[index + 1 : index + 2] == ["mlir-opt"]:
            stages.append([])  # the next mlir-opt of the chain runs on what this one printed
            continue
        if word == "|":
            break  # the rest of a RUN line (mlir-runner, FileCheck) is not ours
        if word in _RUN_LINE_WORDS:
            continue
        match = _FLAG.match(word)
        if not match:
            raise CompileError(f"'{word}' in the lowering pipeline is not a pass",
                               fix="give mlir-opt's pass flags (-name or -name=\"options\") or a pass pipeline "
                                   f"({hint('lowering', 'name{options}, ...')})")
        name, value = match.groups()
        passtext.check_flag(word, name, value)  # before any mlir-opt reads it: passes only (see passtext)
        stages[-1].append(f"--pass-pipeline={anchored(value or '')}" if name == "pass-pipeline" else word)
    return stages


def anchored(pipeline):
    """`pipeline` anchored on the top module, as --pass-pipeline wants it."""
    return pipeline if re.match(r"\s*(builtin\.module|any)\(", pipeline) else f"builtin.module({pipeline})"


def _with_values(element, changes):
    """`element` (`name{k=v ...}`) with the options in `changes` set (a value with spaces is quoted)."""
    name, values = passtext.element(element)
    values.update(changes)
    shown = " ".join(f"{key}={_quoted(value)}" for key, value in values.items())
    return f"{name}{{{shown}}}"


def _quoted(value):
    if value.startswith("{") and value.endswith("}"):
        return value  # a list option (ptxas-cmd-options={-a -b}), as mlir-opt prints and reads it
    return f'"{value}"' if re.search(r"[\s,{}()]", value) else value


@functools.lru_cache(maxsize=64)
def _expanded(args):
    """The top-level pipeline elements mlir-opt runs for `args` (its pass flags, or one --pass-pipeline): flags
    reach mlir-opt as given, so op-anchored ones (`-convert-gpu-to-nvvm`) nest into `gpu.module(...)` as on a
    RUN line. The expansion is a fact of the mlir-opt file (toolchain.file_fact, in the user's tool facts): the
    build tool's process and each worker read it there instead of starting mlir-opt once per pipeline each (a
    build of 44 sources with their own RUN lines ran 66 of them, 0.4 s of its 1.5 s)."""
    tool = toolchain.llvm_tool("mlir-opt")
    dumped = toolchain.file_fact(tool, "pipeline " + shlex.join(args), lambda: _dump_pipeline(tool, args)[0])
    if dumped is None:
        first = _dump_pipeline(tool, args)[1] or "no message"  # not kept: run again for its message
        option = re.search(r"no such option (\S+)", first)
        named = pipelinefixes.no_such_option(_given(args), option.group(1)) if option else None
        raise named or _Unreadable(f"mlir-opt cannot read the lowering pipeline: {first}")
    passtext.check_refused(dumped)  # also in what a named pipeline or an option's nested pipeline expands to
    return tuple(passtext.split(dumped, ","))


class _Unreadable(CompileError):
    """mlir-opt cannot read the pipeline: expand() gives the fix, which fits the file's target."""


def _given(args):
    """(name, {option: value}) of every pass `args` (RUN-line flags, or one --pass-pipeline) names, in order."""
    for word in args:
        name, value = _FLAG.match(word).groups()
        yield from (passtext.given(value or "") if name == "pass-pipeline" else
                    [passtext.element(f"{name}{{{value}}}" if value else name)])


def _dump_pipeline(tool, args):
    """(the elements of the pipeline mlir-opt runs for `args`, as one text; None where it cannot read them, with
    its first line of message)."""
    argv = [tool, "--mlir-disable-threading", "-", "--dump-pass-pipeline", *args, "-o", os.devnull]
    with tempfile.TemporaryDirectory(prefix="mlirgpu-pipeline-") as scratch:  # a pass's relative file lands here
        result = process.run(argv, "expanding the lowering pipeline", input=b"module {}\n", cwd=scratch)
    text = result.stderr.decode("utf-8", "replace")
    start = text.find("builtin.module(")
    if result.returncode != 0 or start < 0:
        return None, next((line.strip() for line in text.splitlines() if line.strip()), None)
    return text[start + len("builtin.module(") : text.rindex(")")], None


def _cut(elements):
    """The Pipeline of `elements`, cut at its (first) serialization."""
    names = [passtext.element(element)[0] for element in elements]
    if SERIALIZE not in names:
        return Pipeline(tuple(elements))
    cut = names.index(SERIALIZE)
    return Pipeline(tuple(elements[:cut]), passtext.element(elements[cut])[1], tuple(elements[cut + 1 :]))


def expand(text, source=None):
    """The Pipeline `text` (any spelling `canonical` reads) stands for; raises a CompileError located in `source`."""
    try:
        return _expand(text)
    except _Unreadable as exc:
        exc.fix = pipelinefixes.example_fix(text, source)
        raise exc.located(source) if source else exc
    except CompileError as exc:
        raise exc.located(source) if source else exc


@functools.lru_cache(maxsize=256)
def _expand(text):
    """expand(text), once per process and text: SCons asks it three times per object (options, signature,
    command line), about a millisecond each, while it reads the build."""
    stages = _stages(text)
    if stages is None:
        passtext.check_pipeline(text)
        return _cut(_expanded((f"--pass-pipeline={anchored(text.strip())}",)))
    return _cut(tuple(element for stage in stages if stage for element in _expanded(tuple(stage))))


def apply(options, source=None):
    """`options` with what the pipeline asks for wherever the build left it unset: the target, chip, features and
    O level of its attach pass, and the format, toolkit, ptxas options, section and libraries of its
    serialization. Raises when the build names another target than the pipeline attaches."""
    if not options.lowering:
        return options
    pipeline = expand(options.lowering, source)
    changes = {}
    _check_chips(pipeline, options, source)
    attach = pipeline.attach()
    if attach:
        target, values, _index = attach
        if options.target and options.target != target.name:
            raise CompileError(f"the lowering pipeline attaches {target.name} targets, the build asks for "
                               f"{options.target}", file=source,
                               fix=f"leave {hint('target')} unset, or give a pipeline for {options.target}")
        changes["target"] = target.name
        if not options.chip and values.get("chip"):
            changes["chip"] = values["chip"]
        if options.opt_level is None and values.get("O", "").isdigit():
            changes["opt_level"] = int(values["O"])
        if not options.features and values.get("features"):
            changes["features"] = values["features"]
    binary = pipeline.binary
    if binary is None:
        return replace(options, **changes)
    asked = binary.get("format") or "fatbin"
    if _BINARY_FORMATS.get(asked) is None:
        what = (" (LLVM bitcode objects), which mlirgpu does not build" if asked in _BINARY_FORMATS else
                ", which gpu-module-to-binary does not know (upstream: 'Invalid format specified')")
        raise CompileError(f"the lowering pipeline asks for format={asked}{what}", file=source,
                           fix="give gpu-module-to-binary's format (cubin-format in upstream's named pipelines) as "
                               "isa, bin or fatbin (a RUN line's %substitutions are lit's: write their value)")
    if options.format == "fatbin":  # fatbin is both defaults
        changes["format"] = _BINARY_FORMATS[asked]
    for name, key in (("toolkit", "toolkit"), ("opts", "opts"), ("section", "section")):
        if not getattr(options, name) and binary.get(key):
            changes[name] = binary[key]
    if not options.link_libs and binary.get("l"):
        changes["link_libs"] = tuple(lib for lib in binary["l"].split(",") if lib)
    return replace(options, **changes)


def _check_chips(pipeline, options, source):
    """Raise for the first attach pass whose chip its target does not know, naming that pass (the build's chip
    replaces the first one's, see device_pipeline), before any module is lowered with it."""
    attaches = list(pipeline.attaches())
    for number, (target, values, _index) in enumerate(attaches):
        chip = values.get("chip")
        if not chip or (number == 0 and options.chip):
            continue
        try:
            target.checks.check_chip(chip)
        except CompileError as exc:
            which = f"attach pass {number + 1} of {len(attaches)}, " if len(attaches) > 1 else ""
            raise CompileError(f"the lowering pipeline's {which}{target.lowering.attach_pass}{{chip={chip}}}: "
                               f"{exc.message}",
                               file=source, fix=exc.fix and f"in that pass's chip=, {exc.fix}") from None


def device_pipeline(pipeline, options):
    """The passes before serialization, with the attach pass set to the compile's chip(s), O level and
    features (one attach pass per chip, as the built-in lowering attaches them)."""
    return anchored(", ".join(_device_elements(pipeline, options)))


def _device_elements(pipeline, options):
    attach = pipeline.attach()
    elements = list(pipeline.before)
    if attach:
        target, values, index = attach
        changes = {"O": str(options.opt_level)} if options.opt_level is not None else {}
        if options.features and "features" in values:
            changes["features"] = options.features
        chips = [chip for chip in options.chip.split(",") if chip] or [values.get("chip", "")]
        elements[index : index + 1] = [_with_values(elements[index], dict(changes, chip=chip)) for chip in chips]
    return elements


def host_pipeline(pipeline):
    """The passes after serialization (upstream's host lowering), anchored; '' when there are none."""
    return anchored(", ".join(pipeline.after)) if pipeline.after else ""


# Where the device part of a run that also runs the host passes ends (lower_with_host): a pass that does nothing
# (one of mlir-opt's test passes), before which MLIR's IR printing writes the file into a folder. `print-ir` would
# print it on stderr, which LLVM leaves unbuffered: 12,000 writes for a 22 KB module, 14 ms of a run's CPU.
_CUT = "test-module-pass"
_CUT_HEADER = re.compile(r"// -----// IR Dump Before .* \(" + _CUT + r"\) //----- //\n")
_TOP_CLOSE = re.compile(r"^\}.*\n", re.M)  # the top module's last line: its ops print indented


def lower_with_host(path, pipeline, options, print_args, what):
    """(the lowered file, its host code after the passes that follow serialization) from one mlir-opt run instead
    of two: the IR printed before a pass that does nothing, where serialization would run, is the file as
    serialization sees it (in the printing flags `print_args` give the output), then the passes after it run on
    the host code with the gpu.modules still in place; each gpu.module there is later replaced by our
    gpu.binary, as upstream's serialization replaces it (those passes, upstream's canonicalize, cse and the last
    conversions, change no host op after what a gpu.module holds). None where the pipeline has no such passes,
    names that pass itself, or the run fails: the caller then runs them apart, after serialization, which
    reports any error at its place as before."""
    if not pipeline.after:
        return None
    device = _device_elements(pipeline, options)
    if any(_CUT in element for element in [*device, *pipeline.after]):
        return None
    merged = anchored(", ".join([*device, _CUT, *pipeline.after]))
    try:
        folder = tempfile.mkdtemp(prefix="mlirgpu-cut-")
    except OSError:
        return None  # no temporary folder: the two runs apart, whose tools report where they cannot write
    try:
        host = mlirtools.run_mlir_tool("mlir-opt", [path, f"--pass-pipeline={merged}", *print_args,
                                                    f"--mlir-print-ir-before={_CUT}",
                                                    f"--mlir-print-ir-tree-dir={folder}"], path, what)
        printed = [os.path.join(where, name) for where, _dirs, names in os.walk(folder) for name in names]
        if len(printed) != 1:
            return None
        with open(printed[0], encoding="utf-8") as handle:
            text = handle.read()
    except process.ToolTimedOut:
        raise  # it would hang again apart
    except (CompileError, OSError, UnicodeDecodeError):
        return None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    header = _CUT_HEADER.match(text)
    end = _TOP_CLOSE.search(text, header.end()) if header else None
    if end is None:
        return None
    return text[header.end() : end.end()], host


def only_modules(names):
    """An attach pass's `module=` regex (POSIX ERE, as llvm::Regex reads it) matching exactly `names`."""
    return "^(" + "|".join(re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", name) for name in names) + ")$"
