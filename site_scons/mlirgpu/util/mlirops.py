"""Reading the ops of MLIR text (on top of mlirtext's lexing): where each op of a region starts and ends, the
header of a `gpu.module`, the attribute names of an `llvm.func`.

The scan (which gpu.modules a file holds), the translation step (a gpu.module retyped as a builtin module) and
targets that look at a module's functions (which one is the first kernel) read ops through here, so there is one reading
of each. Like mlirtext, this raises `Unreadable` for anything it does not follow; callers then let mlir-opt
normalise the text, or step aside.
"""
import re
from dataclasses import dataclass

from .mlirtext import (SYMBOL, Structure, Unreadable, matching_close, read_symbol, skip_space, symbol_name,
                       unpreceded)

# An op name first on its line (after a result's `%x =`), or right after a `{` or `}` on the same line.
_CANDIDATE = re.compile(r"(?:^[ \t]*(?:%[^\n={}]*=[ \t]*)?|(?<=[{}])[ \t]*)"
                        r"([A-Za-z_][\w$]*(?:\.[\w$]+)+|module)(?=[\s@({<\[]|$)", re.M)


_GENERIC_FUNC = re.compile(r'"llvm\.func"\s*\(')
_GPU_MODULE = re.compile(r"gpu\.module\b")  # not after [\w.$] (see first_gpu_module)
_NAME_CHAR = re.compile(r"[\w.$]")


def op_spans(st, start, end, depth):
    """(op name, name start, name end, span end) of each op directly in the region [start, end) at `depth`.

    An op starts with its name (a dotted identifier, or `module`) at the region's depth, first on its line or
    right after the region's `{`, a previous op's `}`, or a result's `=`."""
    starts = []
    for match in _CANDIDATE.finditer(st.masked, start, end):
        if st.depth_at(match.start(1)) == depth:
            starts.append((match.group(1), match.start(1), match.end(1)))
    return [(name, s, e, starts[i + 1][1] if i + 1 < len(starts) else end)
            for i, (name, s, e) in enumerate(starts)]


def header_end(st, name_end, span_end, depth):
    """Where an op's header ends: its first `{` at its own depth (region or attribute dictionary)."""
    pos = st.masked.find("{", name_end, span_end)
    while pos >= 0 and st.depth_at(pos) != depth:
        pos = st.masked.find("{", pos + 1, span_end)
    return span_end if pos < 0 else pos


@dataclass(frozen=True)
class ModuleHeader:
    """`gpu.module @sym [<handler>] [[targets]] [attributes {...}] {`: the symbol and the offsets of each part
    (None where absent; a span is (start, end) of its text, brackets included); `body` is the region's `{`."""

    name: str
    handler: tuple
    targets: tuple
    attributes: tuple
    body: int


def gpu_module_header(st, name_end):
    """Read the header of the gpu.module whose op name ends at `name_end`."""
    clean, masked = st.clean, st.masked
    pos = skip_space(masked, name_end)
    name, pos = read_symbol(clean, pos)
    pos = skip_space(masked, pos)
    parts = {}
    for part, opener, closer in (("handler", "<", ">"), ("targets", "[", "]")):
        parts[part] = None
        if masked.startswith(opener, pos):
            close = matching_close(clean, pos, opener, closer)
            parts[part], pos = (pos, close + 1), skip_space(masked, close + 1)
    attributes = None
    if masked.startswith("attributes", pos):
        start, pos = pos, skip_space(masked, pos + len("attributes"))
        if not masked.startswith("{", pos):
            raise Unreadable("gpu.module attributes")
        attributes, pos = (start, st.closing[pos] + 1), skip_space(masked, st.closing[pos] + 1)
    if not masked.startswith("{", pos):
        raise Unreadable("gpu.module body")
    return ModuleHeader(name, parts["handler"], parts["targets"], attributes, pos)


def _only_gpu_module(text):
    """The Structure of `text` (one gpu.module's text) and where its op name ends."""
    st = Structure(text)
    return st, first_gpu_module(st)


def first_gpu_module(st):
    """The match of the first `gpu.module` op name in the Structure `st` (not part of a longer name)."""
    head = next(unpreceded(_GPU_MODULE, st.masked, _NAME_CHAR), None)
    if head is None:
        raise Unreadable("no gpu.module")
    return head


def as_builtin_module(text):
    """One gpu.module's text as a builtin module with the same attributes and body (`module attributes {...}
    {...}`): what mlir-translate can translate where a gpu.module without an enclosing module crashes it."""
    st, head = _only_gpu_module(text)
    header = gpu_module_header(st, head.end())
    attributes = text[header.attributes[0] : header.attributes[1]] + " " if header.attributes else ""
    return f"{text[: head.start()]}module {attributes}{text[header.body :]}"


def function_attribute_names(st, name_end, span_end):
    """Names in the `attributes {...}` of the `llvm.func` op whose name ends at `name_end` (custom syntax:
    `llvm.func [linkage] @sym(args) [-> type] [comdat(...)] [vscale_range(...)] [attributes {...}]`)."""
    clean, masked = st.clean, st.masked
    symbol = SYMBOL.search(clean, name_end, span_end)
    if symbol is None:
        raise Unreadable("llvm.func symbol")
    pos = skip_space(masked, matching_close(clean, masked.index("(", symbol.end()), "(", ")") + 1)
    if masked.startswith("->", pos):
        pos = skip_space(masked, pos + 2)
        pos = matching_close(clean, pos, "(", ")") + 1 if masked.startswith("(", pos) else _type_end(masked, pos)
        pos = skip_space(masked, pos)
    for keyword in ("comdat", "vscale_range"):
        if masked.startswith(keyword, pos):
            pos = skip_space(masked, matching_close(clean, masked.index("(", pos), "(", ")") + 1)
    if pos >= span_end or not masked.startswith("attributes", pos):
        return set()
    pos = skip_space(masked, pos + len("attributes"))
    if not masked.startswith("{", pos):
        raise Unreadable("llvm.func attributes")
    return _dictionary_keys(clean, masked, pos, st.closing[pos])


def first_function_with(text, attribute):
    """The name of the first `llvm.func` directly in the gpu.module `text` whose attributes include
    `attribute` (in op order, as upstream's walk of the module meets them), or None."""
    st, head = _only_gpu_module(text)
    if _GENERIC_FUNC.search(st.clean):
        raise Unreadable("llvm.func in generic syntax")
    body = gpu_module_header(st, head.end()).body
    for op, _start, name_end, span_end in op_spans(st, body + 1, st.closing[body], st.depth_at(body + 1)):
        if op == "llvm.func" and attribute in function_attribute_names(st, name_end, span_end):
            return symbol_name(SYMBOL.search(st.clean, name_end, span_end).group(1))
    return None


def _type_end(masked, pos):
    """End of a result type written without parentheses (`!llvm.ptr`, `vector<4xf32>`)."""
    depth = 0
    while pos < len(masked):
        char = masked[pos]
        if char in "<([":
            depth += 1
        elif char in ">)]" and not (char == ">" and masked[pos - 1] == "-"):
            depth -= 1
        elif depth == 0 and (char.isspace() or char == "{"):
            return pos
        pos += 1
    raise Unreadable("result type")


def _dictionary_keys(clean, masked, start, end):
    """The keys of the attribute dictionary between the braces at `start` and `end`."""
    keys, depth, entry = set(), 0, start + 1
    for pos in range(start + 1, end + 1):
        char = masked[pos] if pos < end else ","
        if char in "<([{":
            depth += 1
        elif char in ">)]}" and not (char == ">" and masked[pos - 1] == "-"):
            depth -= 1
        elif char == "," and depth == 0:
            key = clean[entry:pos].split("=", 1)[0].strip()
            if key:
                keys.add(symbol_name(key) if key.startswith('"') else key)
            entry = pos + 1
    return keys
