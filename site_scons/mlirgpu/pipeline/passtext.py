"""What a `--lowering` pipeline may hold, and how its text reads: passes and pass pipelines that mlir-opt
registers (with their options), in op anchors (`gpu.module(...)`, `func.func(...)`, `any(...)`); nothing else.

A lowering's text reaches mlir-opt while the build is only planned (`mlirgpu list-outputs`, a CMake configure,
`scons -n`), and again in the compile. So it is read by an allow-list, before any mlir-opt sees it: every name must
be one the mlir-opt file registers as a pass or pipeline, as its `--help` lists them with no plugin loaded (a fact
of the tool file, see toolchain.file_fact). Any other mlir-opt flag (`--load-pass-plugin`, which runs the
plugin's code; `--log-actions-to=F`, which writes a file no build declares) is refused by name, with why.
"""
import difflib
import functools
import re

from ..compile_options import hint
from ..errors import CompileError
from ..llvm import process, toolchain

# Flags that are not passes, named here only to say why they are refused (the allow-list refuses them anyway).
_LOADS_CODE = ("load-pass-plugin", "load-dialect-plugin")
_WRITES_FILES = ("o", "log-actions-to", "profile-actions-to", "mlir-generate-reproducer",
                 "mlir-pass-pipeline-crash-reproducer", "mlir-print-ir-tree-dir", "remarks-output-file", "remark-format",
                 "lto-pass-remarks-output", "dot-cfg-mssa", "polly-dump-before-file", "polly-dump-after-file")
# Registered passes whose work is writing a file (mlir-opt 22's only pass option naming a file to write is
# snapshot-op-locations' filename=): refused wherever they appear, also in a pass option's nested pipeline.
REFUSED_PASSES = {"snapshot-op-locations": "writes the IR to its filename= file, which the build does not declare"}
_REFUSED = re.compile(r"(?<![\w.\-])(" + "|".join(map(re.escape, REFUSED_PASSES)) + r")(?![\w.\-])")
_ANCHOR = re.compile(r"([\w.\-]+)\s*\((.*)\)\s*\Z", re.S)  # `gpu.module(...)`: an op name has a dot, or is `any`
_FLAG_IN_TEXT = re.compile(r"(?<!\S)-{1,2}([A-Za-z][\w.\-]*)(?:=\S*)?")
_PASS = re.compile(r"([A-Za-z][\w\-]*)\s*(?:\{.*\})?\s*\Z", re.S)


def split(text, separators):
    """The non-empty parts of `text` between `separators` at nesting depth 0 (braces, parentheses and quotes
    nest), stripped: a pipeline's elements (",") or an element's options (whitespace)."""
    parts, depth, start, quote = [], 0, 0, None
    for index, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
        elif char in separators and depth == 0:
            parts.append(text[start:index].strip())
            start = index + 1
    parts.append(text[start:].strip())
    return [part for part in parts if part]


def element(text):
    """(name, {option: value}) of a pipeline element `name{k=v k=v}` (nested pipelines have no options)."""
    match = re.match(r"([\w.\-]+)\s*(?:\{(.*)\})?\s*\Z", text, re.S)
    if not match:
        return text.split("(", 1)[0].strip(), {}
    values = {}
    for word in split(match.group(2) or "", " \t\n"):
        key, _, value = word.partition("=")
        values[key] = value.strip("\"'") if value[:1] in "\"'" else value
    return match.group(1), values


def registered():
    """{name: (option names)} of every pass and pass pipeline the mlir-opt file registers, as `mlir-opt --help`
    lists them with no plugin loaded; remembered per mlir-opt file (a build asks it in every process)."""
    tool = toolchain.llvm_tool("mlir-opt")
    listed = toolchain.file_fact(tool, "registered passes", lambda: _listed(tool))
    if not listed:
        raise CompileError(f"cannot read the passes {tool} registers (its --help lists none)",
                           fix="point the build at MLIR 22's mlir-opt")
    return _parsed(listed)


@functools.lru_cache(maxsize=4)
def _parsed(listed):
    return {name: tuple(options) for name, *options in (line.split() for line in listed.splitlines())}


def _listed(tool):
    """One line per pass or pipeline of mlir-opt's --help (its "Compiler passes to run" section: passes at
    indentation 6, their options at 8): the name, then its options; None when there is no such section."""
    result = process.run([tool, "--help"], "listing the passes mlir-opt registers")
    text = result.stdout.decode("utf-8", "replace")
    section = re.search(r"^  Compiler passes to run\n(.*?)(?=^  -|\Z)", text, re.M | re.S)
    if result.returncode != 0 or not section:
        return None
    lines = []
    for line in section.group(1).splitlines():
        found = re.match(r"( {6}| {8})-{1,2}([\w.\-]+)", line)
        if found and len(found.group(1)) == 6:
            lines.append([found.group(2)])
        elif found and lines:
            lines[-1].append(found.group(2))
    return "\n".join(" ".join(line) for line in lines) or None


def check_flag(word, name, value):
    """Raise unless the RUN-line word `word` (flag `name`, `value` after its `=`) is a pass or pipeline flag,
    or `--pass-pipeline=` with a pipeline check_pipeline takes."""
    if name == "pass-pipeline":
        check_pipeline(value or "")
    else:
        _check_name(name, word)
        check_refused(f"{name} {value or ''}")


def check_pipeline(text):
    """Raise unless every element of the pass pipeline `text` is a registered pass or pipeline (with options)
    or an op anchor holding such elements; and no refused pass appears, not even in an option's value."""
    for part in split(text, ","):
        anchor = _ANCHOR.match(part)
        if anchor and ("." in anchor.group(1) or anchor.group(1) == "any"):
            check_pipeline(anchor.group(2))
            continue
        found = _PASS.match(part)
        if not found:
            flag = _FLAG_IN_TEXT.search(part)
            if flag and flag.group(1) not in registered():
                _check_name(flag.group(1), flag.group(0))  # a flag after the pipeline: refused by what it is
            raise _refusal(part, "is not a pass, a pipeline or an op anchor (`gpu.module(...)`)")
        _check_name(found.group(1), part)
    check_refused(text)


def given(text):
    """(name, {option: value}) of every pass of the pipeline `text`, in order, those in op anchors too."""
    for part in split(text, ","):
        anchor = _ANCHOR.match(part)
        if anchor and ("." in anchor.group(1) or anchor.group(1) == "any"):
            yield from given(anchor.group(2))
        else:
            yield element(part)


def check_refused(text):
    """Raise when `text` (a pipeline, an option's value, or mlir-opt's expansion) names a refused pass."""
    found = _REFUSED.search(text)
    if found:
        raise _refusal(found.group(1), REFUSED_PASSES[found.group(1)])


def _check_name(name, word):
    passes = registered()
    if name in passes:
        return
    if name in _LOADS_CODE:
        why = "loads code into mlir-opt (a plugin), which no planning or build step may run"
    elif name in _WRITES_FILES:
        why = "writes a file the build does not declare"
    elif name.startswith("mlir-") or name in _NOT_PASSES:
        why = "is an mlir-opt option, not a pass"
    else:
        close = difflib.get_close_matches(name, passes, n=1)
        why = "is not a pass or pipeline mlir-opt registers" + (f" (did you mean {close[0]}?)" if close else "")
    raise _refusal(word, why)


_NOT_PASSES = ("split-input-file", "verify-diagnostics", "allow-unregistered-dialect", "emit-bytecode",
               "dump-pass-pipeline", "irdl-file", "run-reproducer")


def _refusal(what, why):
    return CompileError(f"'{what}' in the lowering pipeline {why}",
                        fix="give only passes and pass pipelines: mlir-opt's pass flags (-name or -name=\"options\") "
                            f"or a pass pipeline ({hint('lowering', 'name{options}, ...')})")
