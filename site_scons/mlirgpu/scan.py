"""What a compile of a `.mlir` file will produce, found without running any tool (for build-system emitters).

A build system asks this on every run, also when nothing changed, so it reads the text directly: comments and
strings are skipped, braces are counted, top-level attribute aliases are resolved, and for each `gpu.module`
directly under the top module its symbol and target list are read. Kernels that `gpu-kernel-outlining` will
create from `gpu.launch` are predicted the way MLIR names them: `@<func>_kernel`, made unique with `_0`, `_1`...,
placed right after their function. What this cannot read (the generic op form) falls back to asking mlir-opt,
and the compile itself checks that what it wrote is what was declared.
"""
import atexit
import bisect
import hashlib
import os
import re
from dataclasses import dataclass

from . import source as sources
from . import store
from .attrs import matching_close, parse_parameters
from .errors import CompileError
from .pipeline import check_options, plan, planned_dumps
from .targets import TARGETS, target_for_attribute


class _Unreadable(Exception):
    """The fast scan cannot read this file; ask mlir-opt."""


@dataclass(frozen=True)
class ScannedModule:
    name: str
    targets: tuple
    start: int = -1  # offset of `gpu.module` in the file (-1 for modules kernel outlining will create)
    end: int = -1  # offset just after its closing brace
    handler: str = ""


_WORD = re.compile(r"[A-Za-z_][\w$.\-]*")


_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[{}]|"')


def _structure(text):
    """A copy of `text` without comments, the same with string contents blanked, and a function giving the
    `{` nesting depth at a position. One regular-expression pass: this runs for every source on every build."""
    clean, masked, breaks, depths = [], [], [0], [0]
    depth = pos = 0
    for match in _TOKENS.finditer(text):
        start, end = match.span()
        token = match.group()
        between = text[pos:start]
        clean.append(between)
        masked.append(between)
        if token == '"':
            raise _Unreadable("unterminated string")
        if token[0] == '"':
            clean.append(token)
            masked.append('"' + " " * (len(token) - 2) + '"')
        elif token[0] == "/":
            clean.append(" " * len(token))
            masked.append(" " * len(token))
        else:
            depth += 1 if token == "{" else -1
            breaks.append(end)
            depths.append(depth)
            clean.append(token)
            masked.append(token)
        pos = end
    clean.append(text[pos:])
    masked.append(text[pos:])

    def depth_at(position):
        return depths[bisect.bisect_right(breaks, position) - 1]

    return "".join(clean), "".join(masked), depth_at


def _aliases(clean):
    aliases = {}
    for match in re.finditer(r"^#([\w$.\-]+)\s*=\s*", clean, re.M):
        start = match.end()
        end = clean.find("\n", start)
        aliases[match.group(1)] = clean[start : end if end >= 0 else len(clean)].strip()
    return aliases


def _target_list(clean, start, aliases):
    """Parse `[#nvvm.target<...>, #alias, ...]` at `start` (or nothing) into TargetAttrs."""
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
            values = parse_parameters(params) if params.strip() else {}
        except (ValueError, IndexError) as exc:
            raise _Unreadable(str(exc)) from exc
        targets.append(sources.TargetAttr(target, f"#{name}<{params}>" if params.strip() else f"#{name}", values))
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


def fast_scan(text, structure=None):
    """[ScannedModule] in the order the compiler will produce them, plus whether lowering will run.
    `structure`: `_structure(text)`, when the caller has it already."""
    if '"gpu.module"' in text or '"builtin.module"' in text:
        raise _Unreadable("generic form")
    clean, masked, depth_at = structure or _structure(text)
    top = re.match(r"\s*(#[^\n]*\n\s*)*module\b", masked)
    child_depth = 1 if top else 0
    modules, symbols, order = [], set(), []
    aliases = _aliases(clean)
    for match in re.finditer(r"(?<![\w.])(gpu\.module|func\.func|gpu\.launch(?![_\w]))", masked):
        op, depth = match.group(1), depth_at(match.start())
        if op == "gpu.module" and depth == child_depth:
            pos = _skip_space(clean, match.end())
            if clean[pos] != "@":
                raise _Unreadable("gpu.module without symbol")
            name, pos = _symbol_at(clean, pos + 1)
            pos = _skip_space(clean, pos)
            handler = ""
            if pos < len(clean) and clean[pos] == "<":
                close = matching_close(clean, pos, "<", ">")
                handler, pos = clean[pos : close + 1], _skip_space(clean, close + 1)
            targets = _target_list(clean, pos, aliases)
            if targets:
                pos = _skip_space(clean, matching_close(clean, pos, "[", "]") + 1)
            if masked.startswith("attributes", pos):
                pos = _skip_space(masked, pos + len("attributes"))
                pos = _skip_space(masked, matching_close(masked, pos, "{", "}") + 1)
            if masked[pos : pos + 1] != "{":
                raise _Unreadable("gpu.module body")
            end = matching_close(masked, pos, "{", "}") + 1
            order.append(("module", name, ScannedModule(name, targets, match.start(), end, handler)))
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
    for kind, name, scanned in order:
        if kind == "module":
            modules.append(scanned)
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
    attached = tuple(sources.TargetAttr(target, f'#{target.attribute}<chip = "{chip}">', {"chip": chip})
                     for chip in chips)
    return [m if m.targets else ScannedModule(m.name, attached) for m in modules]


class _ScanCache:
    """Scans remembered per file content, in this process and, when a build tool names a file for it
    (`use_cache_file`, one per project), across runs: a null build of many sources then reads and hashes each
    source instead of scanning it. Keys are hashes of the bytes, never timestamps, so an edit that keeps the
    size and modification time (`cp -p`, `rsync -a`, `tar x`, clock skew) is seen. A damaged or foreign-shaped
    cache file or entry is a miss."""

    KEEP_UNUSED = 2000  # entries not used in this run that are kept (another build may still want them)

    def __init__(self):
        self.memory = {}
        self.stored = None
        self.used = set()
        self.dirty = False
        self.path = None

    def _load(self):
        stored = store.read_json(self.path) if self.path else None
        self.stored = stored if isinstance(stored, dict) else {}
        atexit.register(self.save)

    def get(self, key):
        if key in self.memory:
            return self.memory[key]
        if self.stored is None:
            self._load()
        entry = self.stored.get(key)
        if entry is None:
            return None
        try:
            modules = [ScannedModule(m["name"], tuple(_stored_target(*t) for t in m["targets"]), m["start"],
                                     m["end"], m["handler"]) for m in entry["modules"]]
            value = (modules, bool(entry["lowering"]), bool(entry["host"]))
        except (KeyError, TypeError, ValueError):
            return None
        self.used.add(key)
        self.memory[key] = value
        return value

    def put(self, key, value):
        self.memory[key] = value
        modules, lowering, host = value
        if self.stored is None:
            self._load()
        self.stored[key] = {
            "modules": [{"name": m.name, "start": m.start, "end": m.end, "handler": m.handler,
                         "targets": [[t.target.attribute, t.text, t.params] for t in m.targets]} for m in modules],
            "lowering": lowering, "host": host}
        self.used.add(key)
        self.dirty = True

    def save(self):
        if not self.dirty or not self.path:
            return
        unused = [key for key in self.stored if key not in self.used][-self.KEEP_UNUSED:]
        entries = {key: self.stored[key] for key in unused + sorted(self.used) if key in self.stored}
        store.write_json(self.path, entries)
        self.dirty = False


def _stored_target(attribute, text, params):
    target = target_for_attribute(attribute)
    if target is None or not isinstance(text, str) or not isinstance(params, dict):
        raise ValueError("not a scan entry")
    return sources.TargetAttr(target, text, params)


_scans = _ScanCache()


def use_cache_file(path):
    """Keep scans across runs in `path` (the SCons tool uses one file per project, beside .sconsign)."""
    _scans.path = path


def read_text(path):
    """A source's text and the hash of its bytes."""
    with open(path, "rb") as handle:
        data = handle.read()
    return data.decode("utf-8"), hashlib.sha256(data).hexdigest()


_digests = {}


def _content_digest(path):
    """The hash of a file's bytes, read once per file version in this process (a version is told by inode and
    change time, which no copy or unpacking tool can keep)."""
    stat = os.stat(path)
    key = (os.path.abspath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if key not in _digests:
        _digests[key] = read_text(path)[1]
    return _digests[key]


def scan_file(path):
    """`fast_scan` of a file plus whether it has host code, remembered per file content (the SCons tool asks
    on every run and for every target's signature)."""
    digest = _content_digest(path)
    found = _scans.get(digest)
    if found is not None:
        return found
    text, digest = read_text(path)
    found = _scans.get(digest)
    if found is None:
        structure = _structure(text)
        modules, lowering = fast_scan(text, structure)
        host = sources.has_host_code(structure[1])
        found = (modules, lowering, host)
        _scans.put(digest, found)
    return found


def planned_outputs(path, options):
    """Dump file names (relative to the dump folder) a compile of `path` with `options` writes, in order.

    Returns [] for input the compile rejects anyway (it then reports the error with file and line).
    """
    try:
        check_options(path, options)
    except CompileError:
        return []
    try:
        modules, _lowering, host = scan_file(path)
        modules = _with_build_targets(modules, options)
        if modules is None:
            return []
        host = options.host_code == "compile" and host
    except (_Unreadable, ValueError, IndexError, UnicodeDecodeError, OSError):
        try:
            loaded = sources.load(path, options)
            plan(loaded.modules, path, options)
        except CompileError:
            return []
        modules, host = loaded.modules, loaded.has_host_code
    return planned_dumps(modules, options, host)


def uses_build_target(path):
    """Whether the build's target/chip/features/O settings affect `path` (some module carries no target, or
    kernels are outlined). Unreadable files count as affected, so a signature is never too small."""
    try:
        _modules, lowering, _host = scan_file(path)
        return lowering
    except (_Unreadable, ValueError, IndexError, UnicodeDecodeError, OSError):
        return True


_TOP = re.compile(r"module(?:\s+@[\w$.\-]+)?(?:\s+attributes\s*\{\s*gpu\.container_module\s*\})?\s*\{")


def direct_source(path, options):
    """The file's gpu.modules cut straight from its text, when that is as exact as normalising it with mlir-opt:
    a top module holding only gpu.modules that all carry targets (plus aliases, comments and a resource
    trailer). Each piece keeps its lines and columns (for debug locations and messages) and gets the file's
    aliases and resources, so `mlir-translate` alone parses, verifies and translates it. Else None."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        structure = _structure(text)
        modules, lowering = fast_scan(text, structure)
        clean, masked, _depth_at = structure
    except (_Unreadable, ValueError, IndexError, UnicodeDecodeError, OSError):
        return None
    if lowering or not modules or sources.has_host_code(masked):
        return None
    if not all(_well_formed(attr) for module in modules for attr in module.targets):
        return None  # mlir-opt's verifier reports a malformed target attribute best
    if len({module.name for module in modules}) != len(modules):
        return None  # and a symbol defined twice
    top = re.search(r"\bmodule\b", masked)
    if not top or masked[: top.start()].strip("\n \t") and not _only_aliases(masked[: top.start()]):
        return None
    header = _TOP.match(masked, top.start())
    if not header:
        return None
    body_end = matching_close(masked, header.end() - 1, "{", "}")
    trailer = text[body_end + 1 :]
    if masked[body_end + 1 :].strip() and not re.fullmatch(r"\s*\{-#.*#-\}\s*", masked[body_end + 1 :], re.S):
        return None
    rest = masked[header.end() : body_end]
    for module in modules:
        start, end = module.start - header.end(), module.end - header.end()
        rest = rest[:start] + " " * (end - start) + rest[end:]
    if rest.strip():
        return None  # other top-level ops: let mlir-opt parse and verify the whole file
    prelude = text[: text.rfind("\n", 0, top.start()) + 1]
    prelude_lines = prelude.count("\n")
    resources = trailer.strip() + "\n" if trailer.strip() else ""
    pieces = []
    for module in modules:
        line = text.count("\n", 0, module.start) + 1
        column = module.start - (text.rfind("\n", 0, module.start) + 1)
        blank = line - 1 - prelude_lines
        if blank < 1:
            return None
        piece = "\n" * blank + prelude + " " * column + text[module.start : module.end] + "\n" + resources
        pieces.append(sources.GpuModule(module.name, line, piece, module.targets, module.handler, line_exact=True))
    return sources.Source(path, pieces)


_PARAMETER_TYPES = {"chip": str, "triple": str, "features": str, "abi": str, "O": int, "link": list, "flags": dict}


def _well_formed(attr):
    return all(key in _PARAMETER_TYPES and isinstance(value, _PARAMETER_TYPES[key])
               for key, value in attr.params.items()) and attr.params.get("O", 2) in (0, 1, 2, 3)


def _only_aliases(masked_prelude):
    return all(not line.strip() or re.match(r"\s*[#!][\w$.\-]+\s*=", line) for line in masked_prelude.splitlines())
