"""Reading MLIR attribute values in the printed form that `mlir-opt` produces.

Only what the compiler needs to plan its work: the parameters of `#nvvm.target<...>` / `#rocdl.target<...>`
(integers, strings, arrays, dictionaries, unit entries) and the name of each `gpu.module`. Translation itself is
always done by the MLIR tools; this never interprets code.
"""
import functools
import re

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)|(?P<id>[A-Za-z_][\w$.\-]*)|(?P<punct>[\[\]{}<>=,:]))'
)


def unescape_mlir_string(body):
    """Decode the inside of an MLIR string literal (`\\\\`, `\\"`, `\\n`, `\\t`, `\\XX`) to bytes."""
    out = bytearray()
    simple = {"\\": 0x5C, '"': 0x22, "n": 0x0A, "t": 0x09}
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out += char.encode("utf-8")
            i += 1
        elif body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
    return bytes(out)


class _Tokens:
    def __init__(self, text):
        self.items = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match or match.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise ValueError(f"unexpected text {text[pos:pos + 20]!r}")
            pos = match.end()
            kind = match.lastgroup
            self.items.append((kind, match.group(kind)))
        self.pos = 0

    def peek(self):
        return self.items[self.pos] if self.pos < len(self.items) else (None, None)

    def take(self, value=None):
        kind, text = self.peek()
        if value is not None and text != value:
            raise ValueError(f"expected {value!r}, got {text!r}")
        self.pos += 1
        return kind, text


def _value(tokens):
    kind, text = tokens.take()
    if kind == "str":
        return unescape_mlir_string(text[1:-1]).decode("utf-8", "replace")
    if kind == "num":
        if tokens.peek()[1] == ":":  # typed integer, e.g. `3 : i32`
            tokens.take(":")
            tokens.take()
        return int(text)
    if text == "[":
        items = []
        while tokens.peek()[1] != "]":
            items.append(_value(tokens))
            if tokens.peek()[1] == ",":
                tokens.take(",")
        tokens.take("]")
        return items
    if text == "{":
        return _dictionary_rest(tokens)
    if text in ("true", "false"):
        return text == "true"
    if kind == "id":
        return text
    raise ValueError(f"unexpected {text!r}")


def _dictionary_rest(tokens):
    entries = {}
    while tokens.peek()[1] != "}":
        kind, key = tokens.take()
        if kind == "str":
            key = key[1:-1]
        if tokens.peek()[1] == "=":
            tokens.take("=")
            entries[key] = _value(tokens)
        else:
            entries[key] = True  # unit attribute
        if tokens.peek()[1] == ",":
            tokens.take(",")
    tokens.take("}")
    return entries


def parse_parameters(text):
    """`O = 3, chip = "sm_90", flags = {fast}` -> {'O': 3, 'chip': 'sm_90', 'flags': {'fast': True}}."""
    tokens = _Tokens("{" + text + "}")
    tokens.take("{")
    return _dictionary_rest(tokens)


@functools.cache
def _bracket_tokens(open_char, close_char):
    return re.compile(r'"(?:[^"\\]|\\.)*"|"|[' + re.escape(open_char + close_char) + "]", re.S)


def matching_close(text, start, open_char, close_char):
    """Index of the bracket closing the one at `start`, skipping string literals. A regular expression walks
    the tokens: the scan runs over whole module bodies for every source on every build."""
    depth = 0
    for match in _bracket_tokens(open_char, close_char).finditer(text, start):
        token = match.group()
        if token == open_char:
            depth += 1
        elif token == close_char:
            depth -= 1
            if depth == 0:
                return match.start()
        elif token == '"':
            raise ValueError("unterminated string")
    raise ValueError(f"unbalanced {open_char}{close_char}")
