"""The dump folder of one compile: every stage's output as a file, and the record of what the compile made.

The pipeline reports each stage's output through `stage_output` (a callback: the stages never know whether
anything is dumped); a module is printed only here. Writes are atomic; each file's sha256 goes into the record
(`mlirgpu.json`, mlirgpu.pipeline.record), which is written last, so a folder holds a record only of a compile
that finished. The previous record is removed first (a failing compile must not leave it to describe other
dumps), and the files it listed that this compile does not write are removed at the end (another target or chip).
"""
import hashlib
import os
import time

from ..errors import CompileError
from ..util.fsutil import remove_quietly, remove_stale_temps, write_atomic
from ..compile_options import hint
from . import stages
from .planning import RECORD_DUMP
from .record import complete_record, project_path, read_listed_dumps, record_text


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
                               fix=f"choose a writable folder for the dumps ({hint('dump_dir')})")
        self.planned = [os.path.join(self.folder, name) for name in planned]
        self.remove_temps()
        self.record_path = os.path.join(self.folder, self.prefix + RECORD_DUMP)
        self.previous = read_listed_dumps(self.record_path, project_path(source))
        remove_quietly(self.record_path)

    def remove_temps(self):
        """Remove what interrupted writes of this compile's dumps left: an earlier compile's, or those of the
        forked stage runners an interrupted compile killed mid-write (execution/fanout)."""
        remove_stale_temps(self.planned)

    @property
    def written(self):
        return list(self.hashes)

    def write(self, name, data):
        started = time.perf_counter()
        path = os.path.join(self.folder, self.prefix + name)
        data = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
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
        """Remove what the previous compile wrote and this one did not, then write the record (`record` as
        `new_record` built it, completed here with the files written and their hashes)."""
        remove_stale_dumps(self.folder, {os.path.basename(path) for path in self.hashes}, listed=self.previous)
        self.write(RECORD_DUMP, record_text(complete_record(record, self.folder, self.hashes, self.prefix)))


def remove_stale_dumps(folder, keep=None, source=None, prefix="", listed=None):
    """Remove from `folder` the dumps an earlier compile's record listed that this compile does not write: the one
    removal of stale dumps (a compile's dump folder, SCons's action, a Dask client, and `mlirgpu compile
    --stale-dumps`, the CMake package's compiles once MLIRGPU_DUMP is off), so no dump of another target, chip
    or setting is left to look current.

    `listed`: the record's plain names as read before this compile overwrote it (record.listed_dumps), else the
    record `<prefix>mlirgpu.json` in `folder` is read now, only if it is of `source` when `source` is given.
    `keep`: the plain names this compile writes there; None when it writes none there, so the record goes too,
    and the folder where that empties it."""
    record = prefix + RECORD_DUMP
    if listed is None:
        listed = read_listed_dumps(os.path.join(folder, record), source and project_path(source))
    if keep is None and listed:
        listed = listed + [record]
    for name in listed:
        if keep is None or name not in keep:
            remove_quietly(os.path.join(folder, name))
    if keep is None and listed:
        try:
            os.rmdir(folder)
        except OSError:
            pass  # other files are there: not only ours


def _holds(path, data):
    """Whether the regular file at `path` holds exactly `data` (read only when its size matches)."""
    try:
        if os.lstat(path).st_size != len(data) or not os.path.isfile(path) or os.path.islink(path):
            return False
        with open(path, "rb") as handle:
            return handle.read() == data
    except OSError:
        return False
