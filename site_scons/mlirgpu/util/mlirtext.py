"""Reading MLIR source text where build tools need it without running MLIR: comments, strings, brackets,
symbols, attribute aliases, and the target lists of `gpu.module`s with their parameters.

This never interprets code; translation is always done by the MLIR tools. Both the fast scan of source files
(`scan`) and the splitting of mlir-opt's normalised output (`source`) read through here, so there is one
reading of each construct. Anything not understood raises `Unreadable`; the scan then steps aside for mlir-opt.
"""
import bisect
import functools
import re
import sys


class Unreadable(ValueError):
    """This text is outside what is read here with certainty."""


# String literals are matched unrolled, `"[^"\\]*(?:\\.[^"\\]*)*"`, never as `"(?:[^"\\]|\\.)*"`: both match the same
# text, but sre keeps a backtracking frame per character of a repeated group (6 GB and 17 s for the 96 MB hex
# string of a 48 MiB dense_resource blob), and a repeated character class runs in one C loop.
SYMBOL = re.compile(r'@("[^"\\\n]*(?:\\.[^"\\\n]*)*"|[A-Za-z_$.\-0-9][\w$.\-]*)')
# A run of comment lines (indented by spaces) is one match: a file of a million comment lines costs one. Its
# repeat is possessive where sre has them (Python 3.11): a greedy one keeps a backtracking frame per line.
_COMMENT_RUN = r"//[^\n]*(?:\n *//[^\n]*)*" + ("+" if sys.version_info >= (3, 11) else "")
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_STRINGS_AND_COMMENTS = re.compile(_STRING + "|" + _COMMENT_RUN + '|"')
_TOKEN_START, _STRING_AT, _COMMENT_RUN_AT = re.compile(r'"|//'), re.compile(_STRING), re.compile(_COMMENT_RUN)
# Every ASCII character but a newline a space: str.translate's ASCII fast path (no encoding, 3x bytes.translate).
_BLANK_ASCII = str.maketrans({chr(code): " " for code in range(128) if code != 10})
_BRACES = re.compile(r"[{}]")
_PLAIN_LINE = re.compile(r"[ \t]*(?://|\r?\n)")  # a line comment or a blank line, as most files write them
_OTHER_LINE = re.compile(r"\n(?![ \t]*(?://|\r?\n))")  # the end of a line the next line of which is neither
_SPACE = re.compile(r"\s*")  # `\s` of a str pattern is what str.isspace() says (Py_UNICODE_ISSPACE)
# A blanked span this long (a dialect resource blob, a run of comment lines) is stepped over in one jump by the
# passes that look for structure: sre spends nanoseconds per character of it (0.3 s for 48 MiB of blanks).
BIG_SPAN = 1 << 16


def _tokens(text):
    """The spans of the comment runs and string literals of `text`, in order, as `_STRINGS_AND_COMMENTS` finds
    them; a string without an escape or a newline is found with str.find (native speed, where sre takes
    nanoseconds per character of a 48 MiB hex string). Raises Unreadable at an unterminated string."""
    comments, strings = [], []
    search, find = _TOKEN_START.search, text.find
    match = search(text)
    while match:
        start = match.start()
        if match.group() == '"':
            close = find('"', start + 1)
            if close < 0 or find("\\", start + 1, close) >= 0 or find("\n", start + 1, close) >= 0:
                literal = _STRING_AT.match(text, start)
                if literal is None:
                    raise Unreadable("unterminated string")
                close = literal.end() - 1
            strings.append((start + 1, close))
            end = close + 1
        else:
            end = _COMMENT_RUN_AT.match(text, start).end()
            comments.append((start, end))
        match = search(text, end)
    return comments, strings


class Structure:
    """A source's text three ways: as written, `clean` (comments blanked), `masked` (comments and string
    contents blanked; every offset stays the same), plus the `{` nesting depth at any offset and the closing
    brace of each opening one. Linear in the text, with long blanked spans stepped over (`BIG_SPAN`): this runs
    for every changed source on every build, and a source may be 48 MiB of comments or of a resource blob."""

    def __init__(self, text):
        comments, strings = _tokens(text)
        self.text = text
        # Built from spans, without a copy of any token: a 48 MiB blob is one string, a file of comments one run.
        blanks = {}  # the blank of each comment span, shared by both (a 48 MiB comment run is blanked once)
        self.clean = _blanked(text, comments, blanks) if comments else text
        self.masked = _blanked(text, sorted(comments + strings), blanks) if strings else self.clean
        self.big = sorted(span for span in comments + strings if span[1] - span[0] >= BIG_SPAN)  # blank in masked
        self._big_ends = [end for _start, end in self.big]
        self._breaks, self._depths, self.closing = [0], [0], {}  # closing: offset of each `{` -> its `}`
        opened = []
        for start, end in self.segments():
            for match in _BRACES.finditer(self.masked, start, end):
                start = match.start()
                if match.group() == "{":
                    opened.append(start)
                elif not opened:
                    raise Unreadable("unbalanced '}'")
                else:
                    self.closing[opened.pop()] = start
                self._breaks.append(start + 1)
                self._depths.append(len(opened))
        if opened:
            raise Unreadable("unbalanced '{'")

    def segments(self):
        """(start, end) of each part of `masked` between its big blanked spans: all that holds any structure."""
        pos = 0
        for start, end in self.big:
            yield pos, start
            pos = end
        yield pos, len(self.masked)

    def skip_space(self, pos):
        """`skip_space(self.masked, pos)`, each big blanked span (white space throughout) crossed in one jump."""
        masked = self.masked
        index = bisect.bisect_right(self._big_ends, pos)  # the first big span that ends after pos
        while index < len(self.big):
            start, end = self.big[index]
            if pos < start:
                pos = _SPACE.match(masked, pos, start).end()
                if pos < start:
                    return pos
            pos, index = end, index + 1
        return skip_space(masked, pos)

    def depth_at(self, position):
        """`{` nesting depth just before `position`."""
        return self._depths[bisect.bisect_right(self._breaks, position) - 1]


def leading_comments_end(text):
    """The offset of the line holding the first character of `text` that is neither white space nor in a line
    comment (the end of its last line when there is none): what comes before holds no structure to read. Plain
    comment and blank lines go in one search (50 ms for 48 MiB, matching them 90); then `_SPACE` and comment runs."""
    pos = 0
    if _PLAIN_LINE.match(text):
        other = _OTHER_LINE.search(text)
        pos = other.start() + 1 if other else text.rfind("\n") + 1
    while True:
        pos = _SPACE.match(text, pos).end()
        if not text.startswith("//", pos):
            return text.rfind("\n", 0, pos) + 1
        pos = _COMMENT_RUN_AT.match(text, pos).end()


def _blanked(text, spans, blanks):
    """`text` with the characters of each span `(start, end)` (in order) blanked, newlines kept. `blanks`: the
    blank of a span by its span, filled here (a span blanked before is not blanked again)."""
    parts, pos = [], 0
    for start, end in spans:
        parts.append(text[pos:start])
        blank = blanks.get((start, end))
        if blank is None:
            blank = _blank(text[start:end]) if text.find("\n", start, end) >= 0 else " " * (end - start)
            blanks[start, end] = blank
        parts.append(blank)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def _blank(text):
    """`text` with every character but a newline a space (one C pass for ASCII text, one per line else)."""
    if text.isascii():
        return text.translate(_BLANK_ASCII)
    return "\n".join(" " * len(line) for line in text.split("\n"))


def without_comments(text):
    """`text` less its comments and the lines they leave blank (strings whole): what MLIR's parser reads of
    it, and no more (a file's prelude may be megabytes of comments, which every piece cut from it would copy)."""
    kept = _STRINGS_AND_COMMENTS.sub(lambda match: "" if match.group().startswith("//") else match.group(), text)
    return "\n".join(line for line in kept.split("\n") if line.strip())


_STRING_OR_TRAILER = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|' + _COMMENT_RUN + r"|\{-#")


def file_parts(text, prelude_start, prelude_end, suffix_start):
    """What each piece cut from a file's `text` shares: the prelude before its top module (aliases, from
    `prelude_start`: before it only comments and blank lines, which it would drop) and what follows the module
    (location aliases), both less comments, and the span (start, end) of its resource trailer (`{-# ... #-}`, or
    an empty span; found outside strings and comments). Read in place: the suffix (a 48 MiB resource blob) is
    not copied to be searched, nor the trailer sliced for the pieces that name no resource."""
    found = next((match for match in _STRING_OR_TRAILER.finditer(text, suffix_start) if match.group() == "{-#"),
                 None)
    end = stop = found.start() if found else len(text)
    if found:  # text[end:].strip() in one copy (the trailer starts with `{-#`): its end, 4 KiB at a time
        stop = len(text)
        while True:
            tail = text[max(end, stop - 4096) : stop]
            kept = len(tail.rstrip())
            stop -= len(tail) - kept
            if kept:
                break
    return (without_comments(text[prelude_start:prelude_end]), without_comments(text[suffix_start:end]).strip(),
            (end, stop))


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
        elif i + 1 < len(body) and body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        elif re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 1 : i + 3]):
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
        else:
            raise Unreadable(f"bad escape in string {body[:40]!r}")
    return bytes(out)


def printable(text):
    """`text` as printable ASCII on one line: anything else as `\\xNN` (or `\\uNNNN`), so a name from a source
    cannot start a new line in a generated comment (a C header's, a shell script's). A file name's byte that is
    not UTF-8 (Python's surrogate escape, U+DC80-U+DCFF) is written as that byte, `\\xNN`."""
    return "".join(ch if 0x20 <= ord(ch) < 0x7F else f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else
                   f"\\x{ord(ch) - 0xDC00:02x}" if 0xDC80 <= ord(ch) <= 0xDCFF else f"\\u{ord(ch):04x}"
                   for ch in text)


def hex_escaped(data):
    """Bytes as the inside of an MLIR string or an LLVM IR `c"..."` string: every byte as a `\\XX` escape (exact,
    and fast: no byte can end or change the string)."""
    return "\\" + data.hex("\\") if data else ""


def symbol_name(token):
    """A symbol as written after `@` (bare or quoted) -> its name."""
    if token.startswith('"'):
        return unescape_mlir_string(token[1:-1]).decode("utf-8", "replace")
    return token


def read_symbol(clean, pos):
    """The symbol `@name` at `pos` -> (name, end)."""
    match = SYMBOL.match(clean, pos)
    if not match:
        raise Unreadable("expected a symbol")
    return symbol_name(match.group(1)), match.end()


def skip_space(text, pos):
    """The first offset from `pos` (0 <= pos) that is not white space, or len(text)."""
    return _SPACE.match(text, pos).end() if pos < len(text) else pos


def unpreceded(pattern, text, before, pos=0, endpos=None):
    """The matches of `pattern` in text[pos:endpos] that do not follow a character `before` (a one-character
    class) matches: what `(?<!before)pattern` finds when `before` matches every character a match can hold (a
    match starting inside a refused one follows such a character too), found by searching for `pattern`
    first. sre tries a leading lookbehind at every offset of the text (1.3 s per 96 MB)."""
    for match in pattern.finditer(text, pos, len(text) if endpos is None else endpos):
        start = match.start()
        if start == 0 or not before.match(text, start - 1):
            yield match


_DIALECT_PREFIX, _DIALECT_BEFORE = re.compile(r"[#!]([A-Za-z_][\w$]*)\."), re.compile(r"[\w$.#!]")


def dialect_prefixes(text, start=0, end=None):
    """The dialect of each `#dialect.` and `!dialect.` in `text[start:end]` (read in place: a 48 MiB resource
    trailer is not copied) not after a word character or `$.#!` (what `unpreceded` finds). Each `#` and `!` is
    found with str.find (a 48 MiB resource blob holds two), then matched there: no match holds a `#` or `!` past
    its first character, so these are the matches a search finds."""
    end = len(text) if end is None else end
    for mark in "#!":
        pos = text.find(mark, start, end)
        while pos >= 0:
            match = _DIALECT_PREFIX.match(text, pos, end)
            if match and not (pos > start and _DIALECT_BEFORE.match(text, pos - 1)):
                yield match.group(1)
            pos = text.find(mark, pos + 1, end)


@functools.cache
def _bracket_tokens(open_char, close_char):
    return re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|"|->|[' + re.escape(open_char + close_char) + "]", re.S)


def matching_close(text, start, open_char, close_char):
    """Index of the bracket closing the one at `start`, skipping string literals (and `->` arrows, whose `>`
    closes nothing)."""
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
            raise Unreadable("unterminated string")
    raise Unreadable(f"unbalanced {open_char}{close_char}")


_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_VALUE_TOKENS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|->|[\[\](){}<>\n]')


def value_end(masked, pos):
    """End of an alias value starting at `pos`: the first newline outside every bracket (values may span
    lines inside brackets), or the end of the text."""
    stack = []
    for match in _VALUE_TOKENS.finditer(masked, pos):
        token = match.group()
        if token == "\n":
            if not stack:
                return match.start()
        elif token in _PAIRS:
            stack.append(_PAIRS[token])
        elif token in ")]}>":
            if not stack or stack.pop() != token:
                raise Unreadable("unbalanced brackets in an alias")
    if stack:
        raise Unreadable("unbalanced brackets in an alias")
    return len(masked)
