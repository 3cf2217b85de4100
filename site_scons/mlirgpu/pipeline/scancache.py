"""The scans of sources remembered per content, in this process and, when a build tool names a file for them,
across runs (mlirgpu.pipeline.scan keeps one, `use_cache_file`; the SCons tool names one file per project).

A null build of many sources then reads and hashes each source instead of scanning it. Keys are hashes of the
bytes, never timestamps, so an edit that keeps the size and modification time (`cp -p`, `rsync -a`, `tar x`,
clock skew) is seen. The file names the scanner that wrote it: another scanner's entries, which may have read a
file differently, are forgotten. A damaged or foreign-shaped cache file or entry is a miss.
"""
import atexit

from ..cache import store

UNREADABLE = "unreadable"  # the scan of a source where mlir-opt must decide (remembered too)


class ScanCache:
    """Scans by content hash. `identity()`: the scanner's identity; `encode`/`decode`: a scan to and from its
    stored (JSON) form, `decode` raising KeyError, TypeError or ValueError for an entry it cannot read."""

    KEEP_UNUSED = 2000  # entries not used in this run that are kept (another build may still want them)
    SCANNER = "scanner"  # the entry naming the scanner that made the others (keys are content hashes)

    def __init__(self, identity, encode, decode):
        self.identity, self.encode, self.decode = identity, encode, decode
        self.memory = {}
        self.stored = None
        self.used = set()
        self.dirty = False
        self.path = None  # the file kept across runs, if any

    def _load(self):
        stored = store.read_json(self.path) if self.path else None
        fresh = isinstance(stored, dict) and stored.get(self.SCANNER) == self.identity()
        self.stored = stored if fresh else {self.SCANNER: self.identity()}  # another scanner's: forgotten
        atexit.register(self.save)

    def get(self, key):
        if key in self.memory:
            return self.memory[key]
        if self.stored is None:
            self._load()
        entry = self.stored.get(key)
        if entry is None:
            return None
        try:
            value = UNREADABLE if entry == UNREADABLE else self.decode(entry)
        except (KeyError, TypeError, ValueError):
            return None
        self.used.add(key)
        self.memory[key] = value
        return value

    def handed(self, key):
        """(key, stored form) of the entry under `key` that this process holds, for another one to `take`; None
        when it holds none (or only an Unreadable)."""
        value = self.memory.get(key) if key else None
        return None if value is None or value == UNREADABLE else (key, self.encode(value))

    def take(self, handed):
        """Hold an entry another process `handed` over, in memory only: its key is a content hash, so it serves
        only the bytes it was made from. One of another shape is left out."""
        key, entry = handed
        if key not in self.memory:
            try:
                self.memory[key] = self.decode(entry)
            except (KeyError, TypeError, ValueError):
                pass

    def put(self, key, value):
        self.memory[key] = value
        if not self.path:
            return  # nothing kept across runs (the CLI): no need for the stored form
        if self.stored is None:
            self._load()
        self.stored[key] = value if value == UNREADABLE else self.encode(value)
        self.used.add(key)
        self.dirty = True

    def forget(self, key):
        """Drop the scan of `key` from this process's memory (its stored form, if any, stays): a compile that has
        cut its pieces reads it no more, and a worker compiling a file of 10,000 modules would hold its 10,000
        modules' symbols and ops while the stage runners work, and every compile's scan after it (issue 40)."""
        self.memory.pop(key, None)

    def save(self):
        if not self.dirty or not self.path:
            return
        unused = [key for key in self.stored if key not in self.used and key != self.SCANNER][-self.KEEP_UNUSED:]
        entries = {self.SCANNER: self.identity()}
        entries.update((key, self.stored[key]) for key in unused + sorted(self.used) if key in self.stored)
        store.write_json(self.path, entries)
        self.dirty = False
