"""Atomic file writes: a temp file in the destination's folder, then `os.replace`.

A build interrupted at any point leaves either the old file or the new one, never a truncated file that a build
system would take as up to date. A temp file is named after its destination (`.NAME.mlirgpu-tmp-XXXXXXXX`), so
the next build writing NAME removes what an interrupted one left (`remove_stale_temps`). New files get the
permissions the user's umask allows (0666 minus the umask), as `open()` would give them.
"""
import os
import secrets

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
    encoded = data.encode("utf-8") if isinstance(data, str) else data
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
        data = data.encode("utf-8")
    folder = os.path.dirname(os.path.abspath(path))
    tmp = temp_name(os.path.join(folder, os.path.basename(path)))
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        try:
            fd = os.open(tmp, flags, FILE_MODE)
        except FileNotFoundError:  # the folder is made only when missing: a compile writes many files into one
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, flags, FILE_MODE)
    except OSError as exc:
        blocker = next((p for p in _parents(folder) if os.path.exists(p) and not os.path.isdir(p)), None)
        reason = f"'{blocker}' is not a folder" if blocker else exc.strerror
        raise CompileError(f"cannot write '{path}': {reason}", fix="choose a writable output location") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        remove_quietly(tmp)
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


MAX_SOURCE_BYTES = 64 << 20  # a .mlir file larger than this is not a GPU module (and would not be read whole)


def read_source(path):
    """The bytes of a source file, refusing what is not one: a folder, a FIFO, a device or socket (which could
    block or never end), or a file over MAX_SOURCE_BYTES. Opened without blocking and checked on the open file,
    so a file swapped after a check is caught too."""
    import stat as stat_module

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CompileError(f"cannot read: {exc.strerror}", file=path,
                           fix="name an existing, readable .mlir file") from exc
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode):
            kind = ("a folder" if stat_module.S_ISDIR(info.st_mode) else "a FIFO" if stat_module.S_ISFIFO(info.st_mode)
                    else "a device" if stat_module.S_ISCHR(info.st_mode) or stat_module.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise CompileError(f"cannot read: it is {kind}", file=path, fix="name a regular .mlir file")
        if info.st_size > MAX_SOURCE_BYTES:
            raise CompileError(f"file of {info.st_size} bytes is larger than a GPU module source may be "
                               f"({MAX_SOURCE_BYTES >> 20} MiB)", file=path, fix="split the file")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if sum(map(len, chunks)) > MAX_SOURCE_BYTES:
                raise CompileError("file grows while it is read", file=path, fix="name a regular .mlir file")
        return b"".join(chunks)
    finally:
        os.close(fd)
