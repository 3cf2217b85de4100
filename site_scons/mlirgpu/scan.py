"""What a compile of a `.mlir` file will produce, found without running any tool (for build-system emitters).

A build system asks this on every run, also when nothing changed, so it reads the text directly: comments and
strings are skipped, braces are counted, top-level attribute aliases are resolved, and for each `gpu.module`
directly under the top module its symbol and target list are read. Kernels that `gpu-kernel-outlining` will
create from `gpu.launch` are predicted the way MLIR names them: `@<func>_kernel`, made unique with `_0`, `_1`...,
placed right after their function. What this cannot read (the generic op form) falls back to asking mlir-opt,
and the compile itself checks that what it wrote is what was declared.
"""
import re
from dataclasses import dataclass

from . import source as sources
from .attrs import matching_close, parse_parameters
from .errors import CompileError
from .pipeline import HOST_DUMP, RECORD_DUMP, check_options, dump_names, plan
from .targets import TARGETS, target_for_attribute


class _Unreadable(Exception):
    """The fast scan cannot read this file; ask mlir-opt."""


@dataclass(frozen=True)
class ScannedTarget:
    target: object
    chip: str


@dataclass(frozen=True)
class ScannedModule:
    name: str
    targets: tuple


_WORD = re.compile(r"[A-Za-z_][\w$.\-]*")


def _structure(text):
    """A copy of `text` without comments, the same with string contents blanked, and the `{` depth per char."""
    out = []
    masked = []
    depths = []
    depth = 0
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if char == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\n":
                    raise _Unreadable("newline in string")
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            masked.append('"' + " " * (j - i - 1) + '"')
            depths.extend([depth] * (j + 1 - i))
            i = j + 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            masked.append(" " * (j - i))
            depths.extend([depth] * (j - i))
            i = j
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        out.append(char)
        masked.append(char)
        depths.append(depth)
        i += 1
    return "".join(out), "".join(masked), depths


def _aliases(clean):
    aliases = {}
    for match in re.finditer(r"^#([\w$.\-]+)\s*=\s*", clean, re.M):
        start = match.end()
        end = clean.find("\n", start)
        aliases[match.group(1)] = clean[start : end if end >= 0 else len(clean)].strip()
    return aliases


def _target_list(clean, start, aliases):
    """Parse `[#nvvm.target<...>, #alias, ...]` at `start` (or nothing) into ScannedTargets."""
    if start >= len(clean) or clean[start] != "[":
        return ()
    body = clean[start + 1 : matching_close(clean, start, "[", "]")]
    targets = []
    pos = 0
    while True:
        match = re.compile(r"#([\w$.\-]+)").search(body, pos)
        if not match:
            return tuple(targets)
        name = match.group(1)
        end = match.end()
        if name in aliases:
            text = aliases[name]
            found = re.match(r"#([\w.]+)(<.*>)?$", text)
            if not found:
                raise _Unreadable(f"alias #{name}")
            name, params = found.group(1), (found.group(2) or "<>")[1:-1]
        elif end < len(body) and body[end] == "<":
            close = matching_close(body, end, "<", ">")
            params = body[end + 1 : close]
            end = close + 1
        else:
            params = ""
        target = target_for_attribute(name)
        if target is None:
            raise _Unreadable(f"target #{name}")
        try:
            chip = parse_parameters(params).get("chip", target.default_chip) if params.strip() else target.default_chip
        except (ValueError, IndexError) as exc:
            raise _Unreadable(str(exc)) from exc
        targets.append(ScannedTarget(target, chip))
        pos = end


def _symbol_at(clean, pos):
    if clean[pos] == '"':
        close = pos + 1
        while clean[close] != '"':
            close += 2 if clean[close] == "\\" else 1
        return sources._symbol(clean[pos : close + 1]), close + 1
    match = _WORD.match(clean, pos)
    if not match:
        raise _Unreadable("symbol")
    return match.group(0), match.end()


def _skip_space(clean, pos):
    while pos < len(clean) and clean[pos].isspace():
        pos += 1
    return pos


def fast_scan(text):
    """[ScannedModule] in the order the compiler will produce them, plus whether lowering will run."""
    if '"gpu.module"' in text or '"builtin.module"' in text:
        raise _Unreadable("generic form")
    clean, masked, depths = _structure(text)
    top = re.match(r"\s*(#[^\n]*\n\s*)*module\b", masked)
    child_depth = 1 if top else 0
    modules, symbols, order = [], set(), []
    for match in re.finditer(r"(?<![\w.])(gpu\.module|func\.func|gpu\.launch(?![_\w]))", masked):
        op, depth = match.group(1), depths[match.start()]
        if op == "gpu.module" and depth == child_depth:
            pos = _skip_space(clean, match.end())
            if clean[pos] != "@":
                raise _Unreadable("gpu.module without symbol")
            name, pos = _symbol_at(clean, pos + 1)
            pos = _skip_space(clean, pos)
            if pos < len(clean) and clean[pos] == "<":
                pos = _skip_space(clean, matching_close(clean, pos, "<", ">") + 1)
            order.append(("module", name, _target_list(clean, pos, _aliases(clean))))
            symbols.add(name)
        elif op == "func.func" and depth == child_depth:
            pos = _skip_space(clean, match.end())
            while clean[pos : pos + 1] != "@":  # `func.func private @f`
                word = _WORD.match(clean, pos)
                if not word:
                    raise _Unreadable("func.func")
                pos = _skip_space(clean, word.end())
            name, _ = _symbol_at(clean, pos + 1)
            order.append(("func", name, None))
            symbols.add(name)
        elif op == "gpu.launch":
            funcs = [entry for entry in order if entry[0] == "func"]
            if not funcs:
                raise _Unreadable("gpu.launch outside a function")
            order.append(("launch", funcs[-1][1], None))
    # Outlined modules go right after their function, in launch order, named uniquely.
    outlined_after = {}
    for kind, name, _ in order:
        if kind == "launch":
            base = f"{name}_kernel"
            unique, counter = base, 0
            while unique in symbols:
                unique = f"{base}_{counter}"
                counter += 1
            symbols.add(unique)
            outlined_after.setdefault(name, []).append(unique)
    for kind, name, targets in order:
        if kind == "module":
            modules.append(ScannedModule(name, targets))
        elif kind == "func":
            modules += [ScannedModule(m, ()) for m in outlined_after.pop(name, [])]
    lowering = any(not m.targets for m in modules)
    return modules, lowering


def _with_build_targets(modules, options):
    """Give target-less modules the targets the build attaches (one per chip in options.chip)."""
    if not any(not m.targets for m in modules):
        return modules
    if not options.target:
        return None
    target = TARGETS[options.target]
    chips = [c for c in (options.chip or target.default_chip).split(",") if c]
    attached = tuple(ScannedTarget(target, chip) for chip in chips)
    return [m if m.targets else ScannedModule(m.name, attached) for m in modules]


def planned_outputs(path, options):
    """Dump file names (relative to the dump folder) a compile of `path` with `options` writes, in order.

    Returns [] for input the compile rejects anyway (it then reports the error with file and line).
    """
    try:
        check_options(path, options)
    except CompileError:
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        modules, _ = fast_scan(text)
        modules = _with_build_targets(modules, options)
        if modules is None:
            return []
        host = options.host_code == "compile" and sources.has_host_code(_structure(text)[1])
    except (_Unreadable, ValueError, IndexError, UnicodeDecodeError, OSError):
        try:
            loaded = sources.load(path, options)
            plan(loaded.modules, path, options)
        except CompileError:
            return []
        modules, host = loaded.modules, loaded.has_host_code
    names = []
    for module in modules:
        names += dump_names(module.name, module.targets, options, host)
    return names + ([HOST_DUMP] if host else []) + [RECORD_DUMP]


def uses_build_target(path):
    """Whether the build's target/chip/features/O settings affect `path` (some module carries no target, or
    kernels are outlined). Unreadable files count as affected, so a signature is never too small."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        return fast_scan(text)[1] or bool(re.search(r"(?<![\w.])gpu\.launch(?![_\w])", _structure(text)[1]))
    except (_Unreadable, ValueError, IndexError, UnicodeDecodeError, OSError):
        return True
