"""Target attributes as the fast scan reads them from a module's text: `#<dialect>.target<chip = "...", O = 3>`,
a list of them, or an alias naming one, with their parameters parsed (strings, integers, arrays, dictionaries);
anything else is Unreadable, and mlir-opt decides. Which attributes are targets the caller says."""
import re

from .mlirtext import Unreadable, matching_close, skip_space, unescape_mlir_string


_PARAM_TOKEN = re.compile(
    r'\s*(?:(?P<str>"[^"\\]*(?:\\.[^"\\]*)*")|(?P<num>-?\d+)|(?P<id>[A-Za-z_][\w$.\-]*)|(?P<punct>[\[\]{}<>=,:]))'
)


class _Tokens:
    def __init__(self, text):
        self.items = []
        pos = 0
        while pos < len(text):
            match = _PARAM_TOKEN.match(text, pos)
            if not match or match.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise Unreadable(f"unexpected text {text[pos:pos + 20]!r}")
            pos = match.end()
            kind = match.lastgroup
            self.items.append((kind, match.group(kind)))
        self.pos = 0

    def peek(self):
        return self.items[self.pos] if self.pos < len(self.items) else (None, None)

    def take(self, value=None):
        kind, text = self.peek()
        if kind is None or (value is not None and text != value):
            raise Unreadable(f"expected {value!r}, got {text!r}")
        self.pos += 1
        return kind, text


def _value(tokens, depth):
    if depth > 32:
        raise Unreadable("attribute nested too deeply")
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
            items.append(_value(tokens, depth + 1))
            if tokens.peek()[1] != "]":
                tokens.take(",")
        tokens.take("]")
        return items
    if text == "{":
        return _dictionary_rest(tokens, depth + 1)
    if text in ("true", "false"):
        return text == "true"
    if kind == "id":
        return text
    raise Unreadable(f"unexpected {text!r}")


def _dictionary_rest(tokens, depth=0):
    entries = {}
    while tokens.peek()[1] != "}":
        kind, key = tokens.take()
        if kind == "str":
            key = unescape_mlir_string(key[1:-1]).decode("utf-8", "replace")
        elif kind != "id":
            raise Unreadable(f"unexpected {key!r}")
        if key in entries:
            raise Unreadable(f"duplicate key {key!r}")
        if tokens.peek()[1] == "=":
            tokens.take("=")
            entries[key] = _value(tokens, depth)
        else:
            entries[key] = True  # unit attribute
        if tokens.peek()[1] != "}":
            tokens.take(",")
    tokens.take("}")
    return entries


def parse_parameters(text):
    """`O = 3, chip = "sm_90", flags = {fast}` -> {'O': 3, 'chip': 'sm_90', 'flags': {'fast': True}}."""
    tokens = _Tokens("{" + text + "}")
    tokens.take("{")
    entries = _dictionary_rest(tokens)
    if tokens.peek()[0] is not None:
        raise Unreadable("text after the parameters")
    return entries


_ATTRIBUTE = re.compile(r"#([\w$.\-]+)")


def target_list(clean, start, aliases, target_for_attribute):
    """The target list `[#<dialect>.target<...>, #alias, ...]` at `start` -> ([(target, text, params)], end).

    `aliases` maps alias names to their value text (a chain of aliases is followed); `target_for_attribute`
    maps an attribute name (`<dialect>.target`) to its target, or None. Anything else in the list is Unreadable."""
    close = matching_close(clean, start, "[", "]")
    body = clean[start + 1 : close]
    found = []
    pos = skip_space(body, 0)
    while pos < len(body):
        match = _ATTRIBUTE.match(body, pos)
        if not match:
            raise Unreadable("expected a target attribute")
        name, end = match.group(1), match.end()
        params = None
        if end < len(body) and body[end] == "<":
            close_params = matching_close(body, end, "<", ">")
            params, end = body[end + 1 : close_params], close_params + 1
        found.append(_target(name, params, aliases, target_for_attribute))
        pos = skip_space(body, end)
        if pos < len(body):
            if body[pos] != ",":
                raise Unreadable("expected ',' in a target list")
            pos = skip_space(body, pos + 1)
    return found, close + 1


_TEXT_PARAMETERS = ("chip", "triple", "features")  # every target's: strings; `O` an integer


def _target(name, params, aliases, target_for_attribute, depth=0):
    target = target_for_attribute(name)
    if target is not None:
        values = parse_parameters(params) if params and params.strip() else {}
        wrong = [key for key in _TEXT_PARAMETERS if not isinstance(values.get(key, ""), str)]
        if wrong or type(values.get("O", 0)) is not int:
            raise Unreadable(f"#{name} has a parameter of the wrong type (mlir-opt reports where)")
        return target, f"#{name}<{params}>" if params and params.strip() else f"#{name}", values
    if params is None and name in aliases and depth < 8:
        value = aliases[name].strip()
        match = re.fullmatch(r"#([\w$.\-]+)(?:<(.*)>)?", value, re.S)
        if match:
            return _target(match.group(1), match.group(2), aliases, target_for_attribute, depth + 1)
    raise Unreadable(f"#{name} is not a target attribute read here")
