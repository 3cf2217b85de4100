"""The stage cache: every stage's output stored under a key made of its input's hash and everything else that
shapes it (mlirgpu.pipeline.stages says what, per stage), shared by every build, project and process of a user.

In the manner of ccache and of Triton's and Inductor's caches, entries are addressed by content, so identical
modules in different files share them, and a stage whose input did not change is not run: an edit that leaves a
module's LLVM IR as it was (a comment, host code, another module of the file) stops at the first stage whose
output is unchanged (early cutoff). Entries are sealed files (mlirgpu.cache.store: written atomically, checked on
every read, a damaged one is a miss), so concurrent builds share the cache safely. The cache keeps to a size
limit by removing the least recently used entries (a hit refreshes an entry's time).

    MLIRGPU_CACHE=off            no cache (also GPU_CACHE=0 under SCons)
    MLIRGPU_CACHE_SIZE=2G        the limit (bytes, or with K, M, G; default 2G)
    MLIRGPU_CACHE_DIR            the root of our caches (entries live in its `stages/` folder)
    MLIRGPU_REMOTE_CACHE         a Redis or Valkey server shared by a team (mlirgpu.cache.remote)
"""
import contextlib
import fcntl
import hashlib
import json
import os
import struct
import time

from . import remote as remotecache, store
from ..util import environment
from ..util.fsutil import remove_quietly

_LENGTH = struct.Struct("<Q")


def enabled():
    """False when `$MLIRGPU_CACHE` turns the cache off (a boolean: mlirgpu.util.environment)."""
    return environment.value("MLIRGPU_CACHE")


def size_limit():
    """`$MLIRGPU_CACHE_SIZE` in bytes (a number, optionally with K, M, G or T); anything else is an error
    naming the variable, never a silent default."""
    return environment.value("MLIRGPU_CACHE_SIZE")


def key(*parts):
    """The key of an entry: the sha256 of its parts (strings, numbers, lists of them)."""
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode("utf-8")).hexdigest()


def pack(named):
    """{name: bytes} as one payload (names and lengths first), for entries of several files."""
    header = json.dumps([[name, len(data)] for name, data in named.items()]).encode("utf-8")
    return _LENGTH.pack(len(header)) + header + b"".join(named.values())


def unpack(payload):
    (size,) = _LENGTH.unpack_from(payload)
    position = _LENGTH.size + size
    named = {}
    for name, length in json.loads(payload[_LENGTH.size : position]):
        named[name] = payload[position : position + length]
        position += length
    return named


def restored(restore, payload):
    """`restore(payload)`, or None when there is no payload or it does not restore: a value that passed its
    seal yet is no output of that stage (written under its key by someone without the team's secret, or of an
    earlier layout) is a miss, and the stage runs, never an internal error."""
    if payload is None:
        return None
    try:
        return restore(payload)
    except (ValueError, KeyError, TypeError, IndexError, struct.error):
        return None


class StageCache:
    """The entries under `root` (`<root>/<2 hex>/<key>`), with a statistics file that `flush` updates under a
    lock (once per compile: the counts of its lookups and stores, and the bytes it added)."""

    def __init__(self, root, limit, remote=None):
        self.root = root
        self.limit = limit
        self.remote = remote  # remotecache.RemoteTier: asked after a local miss, given what is stored here
        self.counts = {"hits": 0, "misses": 0, "stores": 0}
        self.added = 0

    def _path(self, entry_key):
        return os.path.join(self.root, entry_key[:2], entry_key)

    def get(self, entry_key):
        """The payload stored under `entry_key`, or None (missing or damaged): here, else in the remote tier
        (a remote hit is stored here too)."""
        return self.get_many([entry_key])[0]

    def get_many(self, entry_keys):
        """`get` for each of `entry_keys`, asking the remote tier once for all the local misses."""
        payloads = []
        for entry_key in entry_keys:
            path = self._path(entry_key)
            payload = store.read_bytes(path)
            if payload is not None:
                with contextlib.suppress(OSError):
                    os.utime(path)  # recently used: the last to be evicted
            self.counts["hits" if payload is not None else "misses"] += 1
            payloads.append(payload)
        missing = [index for index, payload in enumerate(payloads) if payload is None]
        if missing and self.remote is not None:
            for index, payload in zip(missing, self.remote.get_many([entry_keys[index] for index in missing])):
                if payload is not None:
                    self._store_here(self._path(entry_keys[index]), payload)
                    payloads[index] = payload
        return payloads

    def put(self, entry_key, payload):
        """Store `payload` here and in the remote tier (a full disk or unwritable folder only costs the entry).
        An entry over a tenth of the size limit is not kept here: it would push out many others, soon itself."""
        if len(payload) <= self.limit // 10:
            self._store_here(self._path(entry_key), payload)
        if self.remote is not None:
            self.remote.put(entry_key, payload)

    def _store_here(self, path, payload):
        store.write_bytes(path, payload)
        if os.path.exists(path):
            self.counts["stores"] += 1
            self.added += len(payload) + len(store.MAGIC) + 32

    def flush(self):
        """Add this compile's counts (the remote tier's too) to the statistics, and evict beyond the limit."""
        remote = self.remote.counts if self.remote is not None else {}
        if not any(self.counts.values()) and not any(remote.values()):
            return
        try:
            with self._locked_stats() as stats:
                for name, count in [*self.counts.items(), *remote.items()]:
                    stats[name] = stats.get(name, 0) + count
                stats["size"] = stats.get("size", 0) + self.added
                size = stats["size"]
        except OSError:
            return
        self.counts = dict.fromkeys(self.counts, 0)
        if self.remote is not None:
            self.remote.counts = dict.fromkeys(self.remote.counts, 0)
        self.added = 0
        if size > self.limit:
            self.evict()

    @contextlib.contextmanager
    def _locked_stats(self):
        os.makedirs(self.root, exist_ok=True)
        with open(os.path.join(self.root, ".lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            stats = store.read_json(os.path.join(self.root, "stats.json")) or {}
            yield stats
            store.write_json(os.path.join(self.root, "stats.json"), stats)

    def _entries(self):
        """(mtime, size, path) of every entry."""
        found = []
        with contextlib.suppress(OSError):
            for folder in os.scandir(self.root):
                if not folder.is_dir() or len(folder.name) != 2:
                    continue
                with contextlib.suppress(OSError):
                    for entry in os.scandir(folder.path):
                        with contextlib.suppress(OSError):
                            info = entry.stat()
                            found.append((info.st_mtime, info.st_size, entry.path))
        return found

    def evict(self, target=None):
        """Remove the least recently used entries until the cache holds at most `target` bytes (default 90%
        of the limit); the exact size is then recorded."""
        target = int(self.limit * 0.9) if target is None else target
        entries = sorted(self._entries())
        total = sum(size for _mtime, size, _path in entries)
        removed = 0
        for _mtime, size, path in entries:
            if total <= target:
                break
            remove_quietly(path)
            total -= size
            removed += 1
        with contextlib.suppress(OSError), self._locked_stats() as stats:
            stats["size"] = total
            stats["evictions"] = stats.get("evictions", 0) + removed
        return removed

    def stats(self):
        """Entries, bytes, limit, and the hits, misses, stores and evictions counted since the last clear."""
        self.flush()
        entries = self._entries()
        with self._locked_stats() as stats:
            stats["size"] = sum(size for _mtime, size, _path in entries)
            counted = dict(stats)
        return {"folder": self.root, "entries": len(entries), "bytes": counted["size"], "limit": self.limit,
                **{name: counted.get(name, 0) for name in ("hits", "misses", "stores", "evictions", "remote_hits",
                                                            "remote_misses", "remote_stores", "remote_rejected")}}

    def clear(self):
        """Remove every entry and the statistics."""
        for _mtime, _size, path in self._entries():
            remove_quietly(path)
        with contextlib.suppress(OSError), self._locked_stats() as stats:
            stats.clear()
            stats["cleared"] = time.time()


def summary(origins):
    """One line about the stages of some compiles: how many the stage cache served (`origins`: each compile's
    {job: {stage: "ran" | "cached"}}), the hit rate a team watches."""
    counts = [state for compile_ in origins for job in compile_.values() for state in job.values()]
    cached = counts.count("cached")
    rate = f" ({100 * cached / len(counts):.0f}% hit rate)" if counts else ""
    return f"stage cache: {cached} of {len(counts)} stages cached{rate}"


def open_cache_root():
    """Where the stage cache of this process's environment keeps its entries."""
    return os.path.join(store.cache_root(), "stages")


def open_cache(warn):
    """The stage cache of this process's environment (with the remote tier `$MLIRGPU_REMOTE_CACHE` names), or
    None when it is turned off. `warn(CompileWarning)`: the compile's warning sink, told of the remote tier's
    faults (said, never the build's failure)."""
    if not enabled():
        return None
    root = open_cache_root()
    return StageCache(root, size_limit(), remotecache.configured(os.path.join(root, "remote-breaker"), warn))
