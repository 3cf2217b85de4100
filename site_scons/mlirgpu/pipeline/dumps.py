"""The dump folder of one compile: every stage's output as a file, and the record of what the compile made.

The pipeline reports each stage's output through `stage_output` (a callback: the stages never know whether
anything is dumped); a module is printed only here. Writes are atomic; each file's sha256 goes into the record
(`mlirgpu.json`), which is written last, so a folder holds a record only of a compile that finished. The
previous record is removed first (a failing compile must not leave it to describe other dumps), and the files it
listed that this compile does not write are removed at the end (another target or chip).
"""
import hashlib
import json
import os
import time

from ..errors import CompileError
from ..util.fsutil import remove_quietly, remove_stale_temps, write_atomic
from ..compile_options import hint
from . import stages
from .planning import RECORD_DUMP

SCHEMA = "scons-mlir-gpu/object-record"


def project_path(path):
    """`path` relative to the folder the compile runs in (the project), never absolute: records and reports
    are shared between machines and checkouts."""
    return os.path.relpath(os.path.abspath(path)).replace(os.sep, "/")


class DumpFolder:
    """The dump folder of one compile. `planned`: the names (with the dump prefix) it will write; only their
    leftover temp files are removed, since other compiles may share the folder (Meson: one build folder, a
    prefix per object) and be writing theirs."""

    def __init__(self, options, source, planned):
        self.folder = options.dump_dir
        self.prefix = options.dump_prefix
        self.source = source
        self.hashes = {}  # path -> sha256 of every file written, in order
        self.seconds = 0.0
        try:
            os.makedirs(self.folder, exist_ok=True)
            reason = None if os.access(self.folder, os.W_OK | os.X_OK) else "not writable"  # read-only mounts too
        except OSError as exc:
            reason = exc.strerror
        if reason:
            raise CompileError(f"cannot write the dump folder '{self.folder}': {reason}", file=source,
                               fix=f"choose a writable {hint('dump_dir')} folder")
        remove_stale_temps([os.path.join(self.folder, name) for name in planned])
        self.record_path = os.path.join(self.folder, self.prefix + RECORD_DUMP)
        self.previous = read_listed_dumps(self.record_path, project_path(source))
        remove_quietly(self.record_path)

    @property
    def written(self):
        return list(self.hashes)

    def write(self, name, data):
        started = time.perf_counter()
        path = os.path.join(self.folder, self.prefix + name)
        data = data.encode("utf-8") if isinstance(data, str) else data
        if _holds(path, data):  # as the last compile left it: only its time is new (build tools compare times)
            os.utime(path)
        else:
            write_atomic(path, data)
        self.hashes[path] = hashlib.sha256(data).hexdigest()
        self.seconds += time.perf_counter() - started

    def stage_output(self, job, stage, output):
        """A stage's output as its dump: the binary stage's files by the target's suffixes, any other the text
        of its output (a module is printed here, only when dumped)."""
        if stage == stages.BINARY:
            for suffix, data in output.items():
                self.write(f"{job.stem}.{suffix}", data)
        else:
            self.write(f"{job.stem}.{stage}", str(output))

    def finish(self, record):
        """Remove what the previous compile wrote and this one did not, then write the record (`record` without
        its `dumps` and `sha256`, which are filled in here)."""
        keep = {os.path.basename(path) for path in self.hashes}
        for name in self.previous:
            if name not in keep:
                remove_quietly(os.path.join(self.folder, name))
        record["dumps"] = sorted(os.path.relpath(path, self.folder) for path in self.hashes)
        record["sha256"] = {os.path.relpath(path, self.folder): digest for path, digest in sorted(self.hashes.items())}
        record["dump_prefix"] = self.prefix
        self.write(RECORD_DUMP, json.dumps(record, indent=2, sort_keys=True) + "\n")


def _holds(path, data):
    """Whether the regular file at `path` holds exactly `data` (read only when its size matches)."""
    try:
        if os.lstat(path).st_size != len(data) or not os.path.isfile(path) or os.path.islink(path):
            return False
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False


def listed_dumps(text, source=None):
    """The plain file names a record's `text` lists as its dumps: none for a damaged record, nor, with `source`,
    for a record of another source (a folder shared without --dump-prefix). The one reading of a previous record
    (the next compile, SCons's clean, a Dask client): names that are no plain file name are never returned."""
    try:
        record = json.loads(text)
        listed = record.get("dumps", []) if source is None or record.get("source") == source else []
    except (ValueError, AttributeError, TypeError):
        return []
    return [name for name in listed if isinstance(name, str) and name == os.path.basename(name)
            and name not in ("", ".", "..") and not name.startswith(".")] if isinstance(listed, list) else []


def read_listed_dumps(record_path, source=None):
    """`listed_dumps` of the record at `record_path` (none when there is no record)."""
    try:
        with open(record_path, encoding="utf-8") as handle:
            return listed_dumps(handle.read(), source)
    except (OSError, UnicodeDecodeError):
        return []
