"""Atomic file writes: a temp file in the destination's folder, then `os.replace`.

A build interrupted at any point leaves either the old file or the new one, never a truncated file that a build
system would take as up to date.
"""
import os
import tempfile

from .errors import CompileError


def write_atomic(path, data):
    """Write bytes or str to `path` atomically, creating its folder."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        except FileNotFoundError:  # the folder is made only when missing: a compile writes many files into one
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    except OSError as exc:
        blocker = next((p for p in _parents(folder) if os.path.exists(p) and not os.path.isdir(p)), None)
        reason = f"'{blocker}' is not a folder" if blocker else exc.strerror
        raise CompileError(f"cannot write '{path}': {reason}", fix="choose a writable output location") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(fd, 0o644)
            handle.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise CompileError(f"cannot write '{path}': {exc.strerror}", fix="free disk space or make it writable") from exc


def _parents(folder):
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def remove_quietly(path):
    """Remove `path` if it is there (used to take away outputs of a failed compile)."""
    try:
        os.unlink(path)
    except OSError:
        pass
