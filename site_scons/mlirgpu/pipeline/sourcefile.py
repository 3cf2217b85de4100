"""A source file's text and the hash of its bytes, read once per file version: a compile reads its source for
the hash, the scan and the pieces (mlirgpu.pipeline.scan), and a source may be 50 MB."""
import hashlib
import os
import threading

from ..errors import CompileError
from ..util.fsutil import read_input
from ..util.mlirtext import Unreadable

_last_read = {}  # the version key of the file read last -> (its text, the hash of its bytes)


def read_text(path):
    """A source's text and the hash of its bytes (Unreadable for what is not a readable source file: the
    compile reports it). The last file read is kept, by version: a compile reads its source for the hash, the
    scan and the pieces, and a source may be 50 MB."""
    try:
        key = version(path)
    except OSError:
        key = None  # reading it says why
    if key is None or key not in _last_read:
        try:
            data = read_input(path)
        except CompileError as exc:
            raise Unreadable(str(exc)) from None
        _last_read.clear()
        _last_read[key] = _decoded_and_hashed(data)
    return _last_read[key]


PARALLEL_BYTES = 4 << 20  # a source this big is hashed on another thread while it is decoded


def _decoded_and_hashed(data):
    """The text of `data` and the hash of its bytes. hashlib lets go of the interpreter while it hashes, so a big
    source's hash runs beside its decoding (48 MiB: 30 ms each) instead of after it."""
    digest = hashlib.sha256()
    if len(data) < PARALLEL_BYTES:
        digest.update(data)
        return data.decode("utf-8"), digest.hexdigest()
    hashing = threading.Thread(target=digest.update, args=(data,), name="mlirgpu-source-hash")
    hashing.start()
    try:
        text = data.decode("utf-8")
    finally:
        hashing.join()  # never left running: the compile may fork next
    return text, digest.hexdigest()


def version(path):
    """What tells a file's version: its inode and change time, which no copy or unpacking tool can keep."""
    stat = os.stat(path)
    return os.path.abspath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


_digests = {}


def content_digest(path):
    """The hash of a file's bytes, read once per file version in this process."""
    key = version(path)
    if key not in _digests:
        _digests[key] = read_text(path)[1]
    return _digests[key]


def known_digest(path):
    """The hash of a file's bytes if this process read its current version, else None; never reads it."""
    try:
        return _digests.get(version(path))
    except OSError:
        return None


def forget():
    """Drop the text kept of the file read last (a compile that has cut its pieces reads no more of it)."""
    _last_read.clear()
