"""The one error type the compiler core raises.

Every failure a user can cause (bad input, a missing tool, an unwritable folder, an LLVM crash) becomes a
`CompileError` that names the file, the line where one is known, and what to do about it. The CLI prints
`str(error)` as a single line and exits 1; the SCons tool turns it into a build error for the target. A bug of
ours becomes an `InternalError`: one line naming the stage, its traceback kept for `-v` / `MLIRGPU_DEBUG=1`.

A fix that names an option is written with options.hint(NAME[, VALUE]) and shown in the caller's terms, each
front end's spelling coming from the one table of options (mlirgpu.compile_options): `--chip sm_90` (CLI, the
default), `GPU_CHIP=sm_90` (SCons), `chip='sm_90'` (API), `-DGPU_CHIP=sm_90` (a compile the CMake package runs:
`mlirgpu compile --caller cmake`), `-Dgpu_chip=sm_90` (the Meson recipe's, `--caller meson`).
"""
import re

STYLES = ("cli", "scons", "api", "cmake", "meson")
ALTERNATIVES = "\x1d"  # separates the values of a hint that offers several (`--format isa|bin`)
_STYLE = ["cli"]
_OPTION_NAMES = {}  # option name -> (CLI flag, SCons variable, CMake spelling, Meson spelling), from compile_options
MAX_MESSAGE = 600  # characters of a message on its one line; the whole text stays in `detail`


def set_style(style):
    """How fixes name options in this process: one of STYLES."""
    _STYLE[0] = style


def know_options(names):
    """Learn how each front end spells each option ({name: (flag, variable, cmake, meson)}; a CMake or Meson
    spelling is a template with `{}` for the value, or a fixed text; '' where that front end has none)."""
    _OPTION_NAMES.update(names)


def render_hints(text):
    """Mentions of options (options.hint) in the front end's terms."""
    def one(match):
        name, value = match.group(1), match.group(2)
        return _spelled(name, None if value is None else value.split(ALTERNATIVES)) if name in _OPTION_NAMES \
            else name

    return re.sub("\x1eoption:(\\w+)(?:\x1f([^\x1e]*))?\x1e", one, text)


def _spelled(name, values):
    """Option `name` with `values` (alternatives; None: no value) as the style of this process writes it. CMake
    passes an option without a spelling of its own in OPTIONS, the Meson recipe on its compile command."""
    import shlex

    flag, variable, cmake, meson = _OPTION_NAMES[name]
    style = _STYLE[0]
    if style == "api":
        return name if values is None else "|".join(f"{name}={value!r}" for value in values)
    template = {"scons": variable and variable + "={}", "cmake": cmake or f"OPTIONS {flag} {{}}",
                "meson": meson}.get(style) or f"{flag} {{}}"
    if "{}" not in template:  # a fixed spelling: -DMLIRGPU_DUMP=ON
        return template
    if values is None:
        head = template.split("{}")[0]
        return head + "..." if head.endswith("=") and style in ("cmake", "meson") else head.rstrip(" =")
    return template.replace("{}", "|".join(map(shlex.quote, values)))


class CompileError(Exception):
    """A failure reported as `FILE[:LINE]: error: WHAT[ (fix: FIX)]`."""

    def __init__(self, message, *, file=None, line=None, fix=None, detail=None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.fix = fix
        self.detail = detail  # tool output worth showing below the one-line summary

    def __reduce__(self):  # keep every field across the worker pipe
        return (_rebuild, (type(self), self.message, self.file, self.line, self.fix, self.detail))

    def with_fix(self, fix):
        self.fix = fix
        return self

    def located(self, file, line=None):
        """Return this error with a location filled in where it had none."""
        if self.file is None:
            self.file = file
            if self.line is None:
                self.line = line
        return self

    def __str__(self):
        text = f"{_where(self.file, self.line)}error: {_shortened(_one_line(render_hints(self.message)))}"
        if self.fix:
            text += f" (fix: {_one_line(render_hints(self.fix))})"
        return text


class InternalError(CompileError):
    """An exception we did not expect: reported as one line naming where it happened; the traceback is the
    detail (shown with -v or MLIRGPU_DEBUG=1)."""

    @classmethod
    def from_exception(cls, where, exc):
        import traceback

        return cls(f"internal error in {where} ({type(exc).__name__})",
                   fix="please report it with the input; -v or MLIRGPU_DEBUG=1 shows the traceback",
                   detail="".join(traceback.format_exception(exc)))


class CompileWarning:
    """Something the user should know that does not stop the compile: `FILE[:LINE]: warning: WHAT`."""

    def __init__(self, message, *, file=None, line=None):
        self.message = message
        self.file = file
        self.line = line

    def __str__(self):
        return f"{_where(self.file, self.line)}warning: {_shortened(_one_line(render_hints(self.message)))}"

    def __reduce__(self):
        return (_rebuild_warning, (self.message, self.file, self.line))


def _where(file, line):
    if not file:
        return ""
    file = _named(file)
    return f"{file}:{line}: " if line else f"{file}: "


def _named(text):
    """`text` with a file name's bytes that are not UTF-8 (Python's surrogate escapes) as `\\xNN`, as they are
    on disk, so the line names the file and prints whatever the terminal's encoding."""
    text = str(text)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _one_line(text):
    """Tool messages may span lines or hold control bytes; ours are one printable line, so logs stay greppable."""
    printable = "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in _named(text))
    return "; ".join(" ".join(part.split()) for part in printable.splitlines() if part.strip())


def _shortened(text):
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 25] + f" ... ({len(text)} characters)"


def _rebuild_warning(message, file, line):
    return CompileWarning(message, file=file, line=line)


def _rebuild(cls, message, file, line, fix, detail):
    return cls(message, file=file, line=line, fix=fix, detail=detail)


class ToolMissing(CompileError):
    """A program or library the compilation needs is not installed."""
