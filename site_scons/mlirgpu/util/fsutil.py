"""Atomic file writes: a temp file in the destination's folder, then `os.replace`.

A build interrupted at any point leaves either the old file or the new one, never a truncated file that a build
system would take as up to date. A temp file is named after its destination (`.NAME.mlirgpu-tmp-XXXXXXXX`), so
the next build writing NAME removes what an interrupted one left (`remove_stale_temps`). New files get the
permissions the user's umask allows (0666 minus the umask), as `open()` would give them.
"""
import os
import secrets
from dataclasses import dataclass

from ..errors import CompileError

TEMP_MARK = ".mlirgpu-tmp-"


def umask():
    """The process umask, read without changing it where Linux tells it (`os.umask` sets it, which other
    threads creating files at that moment would see)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


FILE_MODE = 0o666  # less the umask at the moment of writing (a served command's: its client's), as open() does


def temp_name(path):
    """A fresh temp file name beside `path`, recognisable as a leftover of a write to `path`."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}{TEMP_MARK}{secrets.token_hex(4)}")


def write_if_changed(path, data):
    """`write_atomic`, unless `path` already holds exactly `data` (a regular file): then it is left as it is, with
    its time, so what includes it (a C header) is not rebuilt by tools that compare times (Make, Ninja, Meson)."""
    encoded = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    try:
        if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == len(encoded):
            with open(path, "rb") as handle:
                if handle.read() == encoded:
                    return
    except OSError:
        pass
    write_atomic(path, encoded)


def write_atomic(path, data):
    """Write bytes or str to `path` atomically, creating its folder."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    write_atomic_with(path, lambda handle: handle.write(data))


def write_atomic_with(path, write):
    """Write `path` atomically, creating its folder: `write(handle)` writes its bytes to a binary file (a
    host object copied from the stage runners' spool: never one `bytes` in memory)."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = temp_name(os.path.join(folder, os.path.basename(path)))
    try:
        fd = _create(tmp, folder, path)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except CompileError:
        raise
    except OSError as exc:
        remove_quietly(tmp)
        raise CompileError(f"cannot write '{path}': {exc.strerror}", fix="free disk space or make it writable") from exc
    except BaseException:
        # Ctrl-C (KeyboardInterrupt) from the temp file's creation on, even as `os.open` returns: none is left
        remove_quietly(tmp)
        raise


def _create(tmp, folder, path):
    """The descriptor of the new temp file `tmp` in `folder`, which is made only when missing (a compile writes
    many files into one)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        try:
            return os.open(tmp, flags, FILE_MODE)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            return os.open(tmp, flags, FILE_MODE)
    except OSError as exc:
        blocker = next((p for p in _parents(folder) if os.path.exists(p) and not os.path.isdir(p)), None)
        reason = f"'{blocker}' is not a folder" if blocker else exc.strerror
        raise CompileError(f"cannot write '{path}': {reason}", fix="choose a writable output location") from exc


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


def remove_stale_temps(paths):
    """Remove temp files that interrupted writes of `paths` left (never another file's: a folder may be shared
    by compiles running now). One listing per folder."""
    wanted = {}
    for path in paths:
        folder, name = os.path.split(os.path.abspath(path))
        wanted.setdefault(folder, set()).add(name)
    for folder, names in wanted.items():
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            if not entry.startswith(".") or TEMP_MARK not in entry:
                continue
            if entry[1:].rsplit(TEMP_MARK, 1)[0] in names:
                remove_quietly(os.path.join(folder, entry))


@dataclass(frozen=True)
class InputKind:
    """A kind of file an mlirgpu command reads whole, and the most bytes one may have: whatever names it (a build
    file, a generated list), a file of that kind is never read into memory past `limit` (the error names the file,
    its size and the limit). docs/reference.md lists the limits."""

    what: str  # the kind in a message: "larger than {what} may be"
    limit: int  # bytes
    fix: str  # for a file over the limit
    file: str = "file"  # such a file in a fix: "name a regular {file}"


SOURCE_INPUT = InputKind("a GPU module source", 64 << 20, "split the file", ".mlir file")  # also a --substitute file
LIBRARY_INPUT = InputKind("a bitcode library", 256 << 20, "link a smaller library (libraries are read whole)",
                    "bitcode file")
RECORD_INPUT = InputKind("a build record or manifest", 64 << 20,
                   "name an mlirgpu.json or gpu-manifest.json that mlirgpu wrote", "JSON file")


def size_problem(size, kind):
    """Why a file of `size` bytes cannot be read as `kind` (None when it can)."""
    if size <= kind.limit:
        return None
    return f"file of {size} bytes is larger than {kind.what} may be ({kind.limit >> 20} MiB)"


def read_input(path, kind=SOURCE_INPUT):
    """The bytes of an input file, refusing what is not one: a folder, a FIFO, a device or socket (which could
    block or never end), or a file over `kind`'s limit. Opened without blocking and checked on the open file,
    so a file swapped after a check is caught too."""
    import stat as stat_module

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CompileError(f"cannot read: {exc.strerror}", file=path,
                           fix=f"name an existing, readable {kind.file}") from exc
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode):
            kind_of = ("a folder" if stat_module.S_ISDIR(info.st_mode) else "a FIFO"
                       if stat_module.S_ISFIFO(info.st_mode) else "a device"
                       if stat_module.S_ISCHR(info.st_mode) or stat_module.S_ISBLK(info.st_mode)
                       else "not a regular file")
            raise CompileError(f"cannot read: it is {kind_of}", file=path, fix=f"name a regular {kind.file}")
        problem = size_problem(info.st_size, kind)
        if problem:
            raise CompileError(problem, file=path, fix=kind.fix)
        # One read of the size the file has (a 48 MiB source is not read in pieces and joined: no copy), then
        # reads until the end, in case it grows meanwhile.
        chunks = [os.read(fd, info.st_size + 1)]
        total = len(chunks[0])
        while chunks[-1]:
            if total > kind.limit:
                raise CompileError("file grows while it is read", file=path, fix=f"name a regular {kind.file}")
            chunks.append(os.read(fd, 1 << 20))
            total += len(chunks[-1])
        return chunks[0] if len(chunks) <= 2 else b"".join(chunks)
    finally:
        os.close(fd)
