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

    def located(self, file, line=None):
        """Return this error with a location filled in where it had none."""
        if self.file is None:
            self.file = file
            if self.line is None:
                self.line = line
        return self

    def __str__(self):
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        text = f"{where}error: {self.message}"
        if self.fix:
            text += f" (fix: {self.fix})"
        return text


class ToolMissing(CompileError):
    """A program or library the compilation needs is not installed."""
