"""Host code translated before its binaries exist, in the same mlir-translate run as the device modules (issue
40: one run per source where two were), then patched to the LLVM IR a translation with the binaries gives.

Each gpu.module is replaced by a `gpu.binary` whose objects hold a marker, unique to the object and to the file,
instead of bytes. mlir-translate 22's `#gpu.select_object` (SelectObjectAttr.cpp) embeds the selected object of
each gpu.binary as `@<module>_binary = internal constant [N x i8] c"<bytes>", align 8` (a NUL added for an
assembly object) and passes N to `mgpuModuleLoad(ptr @<module>_binary, i64 N)` (`mgpuModuleLoadJIT` takes the
object's `O` property instead, not its size); nothing else in the module depends on the bytes. The patch writes
the real bytes as LLVM's printer does (`printEscapedString`: printable ASCII as it is, `\\\\` for a backslash,
`\\XX` for the rest, `"` included) and their size at every use, which gives the same text, byte for byte.

It proves each step or gives up (None): every marker found exactly where one is expected, one embedded object per
gpu.binary, every use of a binary's global in one of the two load calls, bytes LLVM would print as a string. The
run's `--preserve-ll-uselistorder` (the device modules need it; upstream's host translation has no such flag)
adds blocks of `uselistorder` directives, which are taken out: any other directive left gives up too. The caller then
translates the host code again with the binaries (mlirgpu.pipeline.hostobject): never a wrong object."""
import hashlib
import re
from dataclasses import dataclass

from . import source as sources
from .gpubinary import FORMATS, binary_ops

_INDEX_DIGITS = 6


@dataclass(frozen=True)
class Placeholder:
    """A file's host code with a marker object per job: `text` (what mlir-translate gets), `prefix` (what starts
    every marker, found nowhere in the file), `jobs` (in marker order: marker i stands for jobs[i])."""

    text: str
    prefix: str
    jobs: tuple

    def marker(self, index):
        return _marker(self.prefix, index)


def _marker(prefix, index):
    return f"{prefix}{index:0{_INDEX_DIGITS}d}"


def placeholder(source, jobs, options):
    """The Placeholder of `source` (a Source with host code), or None where the host translation cannot be made
    ahead: the rest of a user's pipeline runs on the host code after serialization (on the binaries), or a
    format whose objects this patch does not know."""
    if not source.has_host_code or source.host_passes or options.format not in FORMATS:
        return None
    digest = hashlib.sha256(source.container.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    prefix = f"mlirgpu.placeholder.{digest}."  # the file's own hash: the same text each build (a cache hit)
    if prefix in source.container:
        return None
    ordered = tuple(jobs)
    index = {id(job): position for position, job in enumerate(ordered)}
    pieces = binary_ops(source, ordered, lambda job: _marker(prefix, index[id(job)]).encode("ascii"), options)
    return Placeholder(sources.replace_modules(source.container, pieces), prefix, ordered)


def llvm_escaped(data):
    """Bytes as LLVM's `printEscapedString` writes them inside `c"..."`."""
    return data.decode("latin-1").translate(_ESCAPES)


_ESCAPES = {byte: ("\\\\" if byte == 0x5C else chr(byte) if 0x20 <= byte <= 0x7E and byte != 0x22
                   else f"\\{byte:02X}") for byte in range(256)}
_NAME_END = r"(?![-a-zA-Z$._0-9])"


def patched(translated, held, data_of, modules):
    """`translated` (the LLVM IR of `held`.text) with each marker object's bytes replaced by `data_of(job)` (the
    object's bytes as a gpu.binary would hold them), or None where that cannot be shown to be exact. `modules`:
    how many gpu.binary ops the host code holds."""
    translated = _without_use_list_orders(translated)
    if translated is None:
        return None
    definition = re.compile(r'^(@(?:[-a-zA-Z$._0-9]+|"[^"\\]*")) = internal constant \[(\d+) x i8\] c"'
                            + re.escape(held.prefix) + rf'(\d{{{_INDEX_DIGITS}}})((?:\\00)?)", align 8$', re.M)
    found = list(definition.finditer(translated))
    if len(found) != modules or translated.count(held.prefix) != len(found):
        return None
    edits, seen = [], set()
    for match in found:
        name, count, index, nul = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if index >= len(held.jobs) or count != len(held.marker(index)) + bool(nul):
            return None
        job = held.jobs[index]
        if id(job.module) in seen:
            return None
        seen.add(id(job.module))
        data = data_of(job) + (b"\0" if nul else b"")
        if not data.strip(b"\0"):  # empty or all NULs: LLVM prints `zeroinitializer`, not a string
            return None
        edits.append((match.start(), match.end(),
                      f'{name} = internal constant [{len(data)} x i8] c"{llvm_escaped(data)}", align 8'))
        uses = _uses(translated, name, count, match.start())
        if uses is None:
            return None
        edits += [(start, end, str(len(data))) for start, end in uses]
    return _apply(translated, edits)


# What `--preserve-ll-uselistorder` (the device run's flag) adds to LLVM's printed module, and nothing else: after
# a function's last block, and after the last function for the globals, a header and one directive a line
# (AsmWriter's printUseLists).
_USE_LIST_ORDERS = re.compile(r"\n; uselistorder directives\n(?:(?:  )?uselistorder(?:_bb)? [^\n]*\n)+")
_DIRECTIVE = re.compile(r"^(?:; )?\s*uselistorder", re.M)


def _without_use_list_orders(text):
    """`text` as printed without `--preserve-ll-uselistorder` (as upstream translates host code), or None where
    a directive is left that is not in a block of them."""
    text = _USE_LIST_ORDERS.sub("", text)
    return None if _DIRECTIVE.search(text) else text


def _uses(text, name, count, definition_at):
    """The spans of the size `count` in every load call of global `name`, or None where `name` is used any
    other way (or a load names another size)."""
    token = re.escape(name) + ("" if name.endswith('"') else _NAME_END)
    sizes = []
    for use in re.finditer(token, text):
        if use.start() == definition_at:
            continue
        before = text[max(0, use.start() - 24) : use.start()]
        after = re.match(r", (i64|i32) (\d+)\)", text[use.end() : use.end() + 32])
        if before.endswith("@mgpuModuleLoad(ptr ") and after and after.group(1) == "i64":
            if int(after.group(2)) != count:
                return None
            sizes.append((use.end() + len(", i64 "), use.end() + after.end() - 1))
        elif before.endswith("@mgpuModuleLoadJIT(ptr ") and after and after.group(1) == "i32":
            continue  # the object's O level, not its size
        else:
            return None
    return sizes


def _apply(text, edits):
    parts, at = [], 0
    for start, end, replacement in sorted(edits):
        if start < at:
            return None
        parts += [text[at:start], replacement]
        at = end
    parts.append(text[at:])
    return "".join(parts)
