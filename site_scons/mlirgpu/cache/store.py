"""Files our caches keep, each sealed with the hash of its content.

Every cache (source scans, tool outputs and identities, reduced device libraries) stores its entries through
here. An entry is `MAGIC + sha256(payload) + payload`: a truncated, emptied, overwritten or foreign file fails
the check, is removed, and reads as a miss, so a damaged cache costs time and never changes an output or blames
another file. Writes are atomic; two processes writing the same entry leave one whole entry.
"""
import hashlib
import json
import os

from ..util import environment
from ..util.fsutil import remove_quietly, write_atomic

MAGIC = b"mlirgpu-cache-1\n"
_DIGEST = 32


def cache_root():
    """Root of our caches: `$MLIRGPU_CACHE_DIR`, else the user's (see user_cache_root)."""
    return environment.value("MLIRGPU_CACHE_DIR") or user_cache_root()


def user_cache_root():
    """This user's cache folder: `$XDG_CACHE_HOME/scons-mlir-gpu`, else `~/.cache/scons-mlir-gpu`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "scons-mlir-gpu")


def seal(payload):
    """`payload` as an entry: the magic, its sha256, itself."""
    return MAGIC + hashlib.sha256(payload).digest() + payload


def unseal(data):
    """The payload of entry `data`, or None when it is not a whole entry."""
    header = len(MAGIC) + _DIGEST
    payload = data[header:]
    if data[: len(MAGIC)] != MAGIC or hashlib.sha256(payload).digest() != data[len(MAGIC) : header]:
        return None
    return payload


def read_bytes(path):
    """The payload of the entry at `path`, or None when it is missing or damaged (a damaged one is removed)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    payload = unseal(data)
    if payload is None:
        remove_quietly(path)
    return payload


def write_bytes(path, payload):
    """Store `payload` at `path`; failures are ignored (a cache only saves time)."""
    try:
        write_atomic(path, seal(payload))
    except Exception:  # noqa: BLE001 - a full disk or an unwritable cache must never fail a build
        pass


def read_json(path):
    """The JSON document stored at `path`, or None when missing or damaged."""
    payload = read_bytes(path)
    if payload is None:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        remove_quietly(path)
        return None


def write_json(path, value):
    write_bytes(path, json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8"))
