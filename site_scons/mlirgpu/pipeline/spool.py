"""The embedded binaries of a file of many modules, spooled to disk by the stage runners that make them, and the
host object written from the spool (issue 40: peak memory that does not grow with the number of modules).

Without it, every job's ISA text came back from its runner (mlirgpu.execution.fanout), the compile's process made
the embedded bytes of each (a second copy), joined them into the object (a third) and sent the binaries back to
the command's process (a fourth): at 10,000 modules about 90 MiB more than at 4000. With it, a runner writes
each job's embedded bytes to its own spool file as the job ends and sends back where they are (`Spooled`: the
file, offset and size); the host object's binaries are those references
(mlirgpu.pipeline.hostobject), and the object is written to its file by copying their ranges from the spool
(`ObjectParts`), byte for byte the object the bytes would have made (mlirgpu.pipeline.elfobject).

A compile spools only where nothing else needs the bytes in memory: it writes an object (compile_to_object), its
file has no host code (the host translation carries the bytes as text), no dump folder (the record hashes every
binary and the object), no compile entry to store (it holds them all), and only the jobs of modules without a
fat container (the container is made from all of a module's jobs at once). The spool's folder lives as long as
the compile's `Spool` (compile_to_object removes it once the object is written).

The modules' LLVM IR goes the other way through the same folder (`Translations`): written once after the
translation, each job reads its module's from the file, so the compile's process does not hold every
translation while the runners work (9 MB at 10,000 modules, in pages every runner shared).
"""
import errno
import os
import shutil
import tempfile
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, replace

from .planning import fat_container
from .stagerunner import JobOutput


@dataclass(frozen=True, slots=True)  # one per spooled job, held by the compile's process: no __dict__ each
class Spooled:
    """One embedded binary in a spool file: `size` bytes at `offset` of `path`."""

    path: str
    offset: int
    size: int

    def __len__(self):
        return self.size

    def read(self):
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            return _read_range(fd, self.offset, self.size)
        finally:
            os.close(fd)


class Spool:
    """Where a compile's stage runners spool the embedded bytes of its jobs (`jobs`: their ids, set by `plan`)."""

    def __init__(self):
        self.folder = None  # made by `plan`: a compile that does not spool makes none
        self.jobs = frozenset()
        self.embedded_bytes = None  # (job, its output) -> the bytes the host object embeds for it
        self._fd, self._path, self._offset = None, None, 0  # this process's spool file (each runner's own)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def plan(self, source, jobs, options, embedded_bytes):
        """Choose the jobs whose bytes are spooled: those of modules without a fat container (see the module's
        docstring for the compiles that spool at all); `embedded_bytes(job, output)` makes a job's bytes."""
        self.folder = tempfile.mkdtemp(prefix="mlirgpu-spool-")
        self.embedded_bytes = embedded_bytes
        by_module = {}
        for job in jobs:
            by_module.setdefault(id(job.module), []).append(job)
        self.jobs = frozenset(job.id for mjobs in by_module.values()
                              if not fat_container([job.attr for job in mjobs], options, source.has_host_code)
                              for job in mjobs)

    def translations(self, irs):
        """`irs` ({module name: LLVM IR}) as Translations in the spool's folder, for the caller to drop its own;
        `irs` itself where the file cannot be written (a full disk, `ulimit -f`): the compile goes on in memory,
        and a stage that writes a file reports the cause as it would have."""
        try:
            return Translations(self.folder, irs)
        except OSError:
            return irs

    def kept(self, job, result):
        """What a runner sends back of `job`'s JobResult: for a spooled job, its embedded bytes go to this
        process's spool file, the result's `spooled` says where, and its output keeps only its logs; any other
        job's result as it is."""
        if job.id not in self.jobs:
            return result
        data = self.embedded_bytes(job, result.output)
        if self._fd is None:  # opened in the runner (forked after planning): closed when it ends
            self._fd, self._path = tempfile.mkstemp(dir=self.folder, suffix=".spool")
        view = memoryview(data)
        while view:  # unbuffered: a runner ends with os._exit, which flushes nothing
            view = view[os.write(self._fd, view) :]
        spooled = Spooled(self._path, self._offset, len(data))
        self._offset += len(data)
        logs = {name: data for name, data in result.output.binaries.items() if name == "log"}
        return replace(result, output=JobOutput(None, logs) if logs else _NO_OUTPUT, spooled=spooled)


# The output of a spooled job without logs (format isa): one for all of them, read and never changed, so the
# compile's process holds one per runner's answer, not one per job (issue 40).
_NO_OUTPUT = JobOutput(None, {})


class Translations(Mapping):
    """{module name: LLVM IR}, kept in a file of `folder` and read back one module at a time (each `[name]`)."""

    def __init__(self, folder, irs):
        self._index = {}  # module name -> its place in the file's order
        self._ends = array("q", [0])  # where each module's LLVM IR ends in the file (UTF-8 bytes)
        fd, self.path = tempfile.mkstemp(dir=folder, suffix=".ll")
        try:
            with os.fdopen(fd, "wb") as handle:
                for name, text in irs.items():
                    data = text.encode("utf-8")
                    handle.write(data)
                    self._index[name] = len(self._ends) - 1
                    self._ends.append(self._ends[-1] + len(data))
        except BaseException:
            os.unlink(self.path)
            raise

    def __getitem__(self, name):
        index = self._index[name]
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            return _read_range(fd, self._ends[index], self._ends[index + 1] - self._ends[index]).decode("utf-8")
        finally:
            os.close(fd)

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._index)


class ObjectParts:
    """A host object as its parts in file order: bytes, and `Spooled` ranges copied from the spool as the object
    is written (never all in memory at once)."""

    def __init__(self, parts):
        self.parts = parts

    def __len__(self):
        return sum(len(part) for part in self.parts)

    def write_to(self, handle):
        """Write the object to the binary file `handle`."""
        pending, files = [], {}
        try:
            for part in self.parts:
                if isinstance(part, Spooled):
                    handle.write(b"".join(pending))
                    pending = []
                    if part.path not in files:
                        files[part.path] = os.open(part.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    handle.write(_read_range(files[part.path], part.offset, part.size))
                else:
                    pending.append(part)
            handle.write(b"".join(pending))
        finally:
            for fd in files.values():
                os.close(fd)


def _read_range(fd, offset, size):
    data = os.pread(fd, size, offset)
    if len(data) != size:  # a spool file cut short: the object would be wrong, so it is not written
        raise OSError(errno.EIO, f"the stage runners' spool ends at byte {offset + len(data)}, not {offset + size}")
    return data


def materialized(binaries):
    """`binaries` (embed.Embedded) with each spooled one's bytes read back (for the LLVM IR path)."""
    return [replace(item, data=item.data.read()) if isinstance(item.data, Spooled) else item for item in binaries]
