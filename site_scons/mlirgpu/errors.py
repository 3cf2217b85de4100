"""The one error type the compiler core raises.

Every failure a user can cause (bad input, a missing tool, an unwritable folder, an LLVM crash) becomes a
`CompileError` that names the file, the line where one is known, and what to do about it. The CLI prints
`str(error)` as a single line and exits 1; the SCons tool turns it into a build error for the target.
"""


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

    def located(self, file, line=None):
        """Return this error with a location filled in where it had none."""
        if self.file is None:
            self.file = file
            if self.line is None:
                self.line = line
        return self

    def __str__(self):
        text = f"{_where(self.file, self.line)}error: {_one_line(self.message)}"
        if self.fix:
            text += f" (fix: {self.fix})"
        return text


class CompileWarning:
    """Something the user should know that does not stop the compile: `FILE[:LINE]: warning: WHAT`."""

    def __init__(self, message, *, file=None, line=None):
        self.message = message
        self.file = file
        self.line = line

    def __str__(self):
        return f"{_where(self.file, self.line)}warning: {_one_line(self.message)}"

    def without_label(self):
        """`FILE:LINE: WHAT`, for reporters that add their own `warning:` label (SCons)."""
        return f"{_where(self.file, self.line)}{_one_line(self.message)}"


def _where(file, line):
    if not file:
        return ""
    return f"{file}:{line}: " if line else f"{file}: "


def _one_line(text):
    """Tool messages may span lines or hold control bytes; ours are one printable line, so logs stay greppable."""
    printable = "".join(ch if ch.isprintable() or ch == "\n" else " " for ch in str(text))
    return "; ".join(" ".join(part.split()) for part in printable.splitlines() if part.strip())


def _rebuild(cls, message, file, line, fix, detail):
    return cls(message, file=file, line=line, fix=fix, detail=detail)


class ToolMissing(CompileError):
    """A program or library the compilation needs is not installed."""
