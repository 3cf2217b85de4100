"""Extra tool options split into arguments exactly as upstream MLIR does (`gpu::TargetOptions::
tokenizeCmdOptions`): one pair of surrounding double quotes, then one of single quotes, is removed, then LLVM's
GNU command-line tokenizer (`cl::TokenizeGNUCommandLine`) splits the rest. That tokenizer is not a shell: a
backslash escapes the next character inside and outside quotes, a quote opens a span that ends at the same
quote, an unclosed quote runs to the end, and empty arguments are dropped. Using `shlex` instead gives other
arguments (and other binaries) for inputs such as `"--maxrregcount=40 -v"`. The other way, `option_words` writes an
option so that a command line gives it back.
"""

_WHITESPACE = " \t\r\n"


def gnu_tokenize(text, report_unclosed=False):
    """`llvm::cl::TokenizeGNUCommandLine(text)` without response-file line marks (with `report_unclosed`:
    (tokens, whether a quote was left open))."""
    tokens = []
    unclosed = False
    token = []
    i, end = 0, len(text)
    while i < end:
        if not token:
            while i < end and text[i] in _WHITESPACE:
                i += 1
            if i == end:
                break
        char = text[i]
        if char == "\\" and i + 1 < end:
            token.append(text[i + 1])
            i += 2
            continue
        if char in "\"'":
            i += 1
            while i < end and text[i] != char:
                if text[i] == "\\" and i + 1 != end:
                    i += 1
                token.append(text[i])
                i += 1
            if i == end:
                unclosed = True
                break
            i += 1
            continue
        if char in _WHITESPACE:
            if token:
                tokens.append("".join(token))
            token = []
            i += 1
            continue
        token.append(char)
        i += 1
    if token:
        tokens.append("".join(token))
    return (tokens, unclosed) if report_unclosed else tokens


def _unquoted(text):
    for quote in ('"', "'"):
        if len(text) >= 1 and text[0] == quote and text[-1] == quote:
            text = text[1:-1] if len(text) >= 2 else ""
    return text


def tokenize_cmd_options(text):
    """Upstream's `TargetOptions::tokenizeCmdOptions` (the `opts=` of gpu-module-to-binary)."""
    return gnu_tokenize(_unquoted(text))


def unclosed_quote(text):
    """Whether upstream's tokenizer would run to the end inside a quote (it accepts that; we refuse it)."""
    return gnu_tokenize(_unquoted(text), report_unclosed=True)[1]


def option_words(flag, value):
    """`flag value` as command-line words that read back as that value: one starting with `-` would be taken for
    an option (argparse refuses `--opts -v`), so it is joined to its flag (`--opts=-v`, `-l-x.bc`)."""
    if not value.startswith("-"):
        return [flag, value]
    return [f"{flag}={value}" if flag.startswith("--") else flag + value]
