"""Running mlir-opt and mlir-translate: their diagnostics become CompileErrors at the file and line they name."""
import re

from . import process, toolchain
from ..cache import stagecache
from ..errors import CompileError
from ..util.mlirops import as_builtin_module
from ..util.mlirtext import Unreadable, unescape_mlir_string
from .process import ToolCrashed
from ..version import __version__


def _argv(tool, args):
    return [toolchain.llvm_tool(tool), "--mlir-disable-threading", *args]


def run_mlir_tool(tool, args, source, what, text=None, fix=None):
    """Run mlir-opt or mlir-translate (single-threaded: inputs are small, and MLIR's thread pool costs more to
    start than it saves) on a file or on `text`; its output, or a CompileError located in `source` (the tool
    missing too)."""
    try:
        argv = _argv(tool, args)
        result = process.run(argv, what, input=None if text is None else text.encode("utf-8"))
    except CompileError as exc:
        raise exc.located(source)
    return _output(result, tool, source, what, fix)


def _output(result, tool, source, what, fix=None):
    """An MLIR tool's output, or the CompileError its diagnostic says."""
    if result.returncode != 0:
        raise mlir_diagnostic(result.stderr.decode("utf-8", "replace"), source, what, fix=fix, tool=tool,
                              code=result.returncode)
    return result.stdout.decode("utf-8")


_ERROR_LINE = re.compile(r"^(.*?):(\d+):(\d+): error: (.*)$")


def mlir_diagnostic(stderr, source, what, fix=None, tool="mlir-opt", code=None):
    """The first `file:line:col: error: ...` of an MLIR tool's output as a CompileError on `source`; output
    without a diagnostic (a broken tool) is reported with the tool's name and exit code."""
    for line in stderr.splitlines():
        match = _ERROR_LINE.match(line)
        if match:
            return CompileError(match.group(4), file=source, line=int(match.group(2)), fix=fix, detail=stderr)
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "no message")
    status = f" (exit code {code})" if code is not None else ""
    return CompileError(f"{what}: {tool} failed{status}: {first}", file=source, fix=fix, detail=stderr)


def translate_pieces(pieces, source, warn):
    """LLVM IR text for each piece (standalone gpu.module text), in order, from one mlir-translate process
    (pieces split by `// -----`); `warn`: the compile's warning sink (the stage cache's remote faults).

    Line numbers inside a chunk count from its marker, so diagnostics name the file's lines only for normalised
    pieces (they carry explicit locations); a failing direct piece is re-read through mlir-opt by the caller.

    mlir-translate 22 crashes verifying atomics (`llvm.cmpxchg`, atomic loads, `atomicrmw xchg`) in a gpu.module
    that has no enclosing module (their verifiers look up the data layout of the closest `builtin.module`, and
    find none): when it crashes, the same pieces are translated again as builtin modules with the same
    attributes and bodies, which give the same LLVM IR (upstream translates the gpu.module inside its file's
    module).

    Each piece's translation is kept in the stage cache (keyed by the piece's text and mlir-translate's
    identity), so an edit to one gpu.module of many translates that one."""
    cache = stagecache.open_cache(warn)
    if cache is None:
        return _translate_crash_safe(pieces, source)
    try:
        tool = toolchain.identity(toolchain.llvm_tool("mlir-translate"))
    except CompileError as exc:  # missing: said at the file, as without a cache
        raise exc.located(source)
    keys = [stagecache.key("translate", piece, tool, __version__) for piece in pieces]
    found = [stagecache.restored(bytes.decode, payload) for payload in cache.get_many(keys)]
    missing = [index for index, text in enumerate(found) if text is None]
    try:
        if missing:  # one run for every piece not in the cache (or whose entry is no text)
            for index, text in zip(missing, _translate_crash_safe([pieces[index] for index in missing], source)):
                found[index] = text
                cache.put(keys[index], text.encode("utf-8"))
    finally:
        cache.flush()
    return found


def _translate_crash_safe(pieces, source):
    try:
        return _translate(pieces, source)
    except ToolCrashed:
        try:
            retyped = [as_builtin_module(piece) for piece in pieces]
        except Unreadable:
            raise CompileError("mlir-translate crashed on a gpu.module whose header cannot be retyped",
                               file=source) from None
        return _translate(retyped, source)


# `--allow-unregistered-dialect`: mlir-translate loads only the dialects translation needs, so attributes of the
# others that upstream's own lowering leaves on LLVM ops (`#xegpu.layout` on `llvm.intr.*` after
# `gpu-lower-to-xevm-pipeline`) would fail to parse; upstream translates in process with every dialect registered
# and ignores them, as their opaque form here is ignored (no dialect that translation uses is unregistered, so the
# output is the same). Pieces that name other dialects are first read by mlir-opt (scan.direct_source), so an
# attribute of a dialect mlir-opt does not know either is still refused.
_TRANSLATE_ARGS = ("--no-implicit-module", "--split-input-file", "--allow-unregistered-dialect", "--mlir-to-llvmir",
                   "--preserve-ll-uselistorder", "-")
# Dialects mlir-translate 22 loads besides the targets' own (scan.direct_source adds those), so it checks their
# attributes and types as mlir-opt does (a subset of them: a file naming another dialect takes mlir-opt's way).
TRANSLATED_DIALECTS = frozenset({"builtin", "dlti", "gpu", "llvm", "ptr"})


def translate_argv():
    """The command line of every translation (the compile server starts it ahead of requests)."""
    return _argv("mlir-translate", _TRANSLATE_ARGS)


# Pieces per mlir-translate run at least, when a file's pieces are shared among several runs at once: a run's
# start costs about as much as translating 30 small modules.
_PIECES_PER_RUN = 64


def _translate(pieces, source):
    """The pieces' LLVM IR; a file of many modules is translated by several mlir-translate runs at once, each
    given a consecutive part of its pieces (mlirgpu.llvm.process.compile_processes)."""
    runs = max(1, min(process.compile_processes(), len(pieces) // _PIECES_PER_RUN))
    size = -(-len(pieces) // runs)
    joined = ["\n// -----".join(text if i == 0 else "\n" + text for i, text in enumerate(pieces[start : start + size]))
              for start in range(0, len(pieces), size)]
    what = "translating to LLVM IR"
    try:
        results = process.run_all([(translate_argv(), what, text.encode("utf-8")) for text in joined])
    except CompileError as exc:
        raise exc.located(source)
    modules = []
    for text, result in zip(joined, results):
        try:
            output = _output(result, "mlir-translate", source, what)
        except CompileError as exc:
            raise _at_source_line(exc, text.split("\n"), source) from None
        # Each module ends in one newline: the last of a run has no blank line after it, and a module's text (the
        # stage cache's key of its first stage) must not depend on where in a run it was translated.
        modules += [piece.rstrip("\n") + "\n" for piece in re.split(r"^(?=; ModuleID = )", output, flags=re.M)
                    if piece.startswith("; ModuleID")]
    if len(modules) != len(pieces):
        raise CompileError(f"mlir-translate returned {len(modules)} modules for {len(pieces)}", file=source)
    return modules


_SPLIT_DIAGNOSTIC = re.compile(r"within split at .*?:(\d+) offset :(\d+):\d+: error: ")
_LINE_LOC = re.compile(r'loc\("([^"\\]*(?:\\.[^"\\]*)*)":(\d+):\d+\)\s*$')  # the string unrolled: util.mlirtext


def _at_source_line(exc, lines, source):
    """`exc` at the source's line: mlir-translate names the line inside its split of the joined pieces (their
    `lines`), say 150 where the file's op is at 231. A normalised piece ends every op's line, or the line
    closing its regions, with the op's location (`loc("file":line:col)`), so the line is the location of the op
    there: the first line from it on, not indented deeper, that ends in a location in `source`. A piece without
    locations (cut straight from the file) gives no line rather than a wrong one."""
    first = next((text for text in (exc.detail or "").splitlines() if _ERROR_LINE.match(text)), "")
    found = _SPLIT_DIAGNOSTIC.match(first)  # the error reported (mlir_diagnostic's), if it is at a split's line
    if found is None or exc.file != source:
        return exc
    line = int(found.group(1)) + int(found.group(2)) - 1  # in the joined `lines`; a chunk starts at its marker
    exc.line = None
    if not 0 < line <= len(lines):
        return exc
    indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for text in lines[line - 1 :]:
        if text == "// -----":
            break
        located = _LINE_LOC.search(text)
        if located and len(text) - len(text.lstrip()) <= indent and _named(located.group(1), source):
            exc.line = int(located.group(2))
            break
    return exc


def _named(escaped, source):
    try:
        return unescape_mlir_string(escaped) == str(source).encode("utf-8", "surrogateescape")
    except Unreadable:
        return False
