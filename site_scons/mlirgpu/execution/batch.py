"""Translating many sources in few mlir-translate runs (a process start-up costs more than translating a typical
module), ahead of their compiles: a build tool names the sources it is about to compile while it still reads its
build files, and runs start in the background, at once or when the first compile asks for a translation (see
Batches). Each compile takes its source's translation, or translates on its own when there is none. A compile
whose entry is cached (mlirgpu.pipeline.compileentry) asks for none."""
import threading

from ..errors import CompileError
from ..llvm.mlirtools import translate_pieces
from ..llvm.process import ToolTimedOut
from ..pipeline.scan import direct_source, pieces_key


def translate_many(paths, at_least=2):
    """Translate the gpu.modules of many sources in one mlir-translate run. Only sources cut directly from
    their text join (scan.direct_source), and only when at least `at_least` do; returns {path: (pieces key,
    {module: LLVM IR}, warnings)}: the warnings of the run's stage cache go with the first source's, into its
    compile's warning sink. Any failure returns {}: each compile then translates, and reports, on its own."""
    batch = []
    for path in paths:
        loaded = direct_source(path, None)
        if loaded is not None:
            batch.append((path, loaded.modules))
    if not batch or len(batch) < at_least:
        return {}
    warnings = []
    try:
        irs = translate_pieces([module.text for _path, modules in batch for module in modules],
                               batch[0][0] if len(batch) == 1 else "<batch>", warnings.append)
    except ToolTimedOut:
        raise  # a hanging mlir-translate: the caller says so instead of running it again
    except CompileError:
        return {}
    result = {}
    for path, modules in batch:
        result[path] = (pieces_key(modules), {m.name: ir for m, ir in zip(modules, irs)}, tuple(warnings))
        warnings = []
        irs = irs[len(modules):]
    return result


class Batches:
    """Background batches for a build of `jobs` parallel compiles. Sources are added as the build declares them
    and dropped as their compiles end. `early`: full runs start as sources are added (8, then 32 sources), so
    the first compiles find theirs done. Otherwise none starts before the first `pretranslated` call: a build
    with a remote cache expects its compiles cached, and looking their translations up ahead would load the
    Redis client into the build tool's process and fetch what no compile asks for. The first call sends off
    every source still to compile: the asking one with the next few as a small run, which it waits for, and
    the rest split over the jobs. Each later compile waits only for the run holding its source."""

    SIZES = (8, 32)  # early runs: the first is small, so the first compiles find theirs done early
    FIRST = 8  # the asking compile's run, when its source was not sent yet: it waits for it
    SPLIT = 4  # the rest is split over the build jobs in parts of at least this many sources

    def __init__(self, jobs, early=True):
        self.jobs = jobs
        self.early = early
        self.started = 0  # early runs sent
        self.pending = {}  # path -> None: the sources still to compile, in the order the build declared them
        self.runs = {}
        self.pool = None
        self.sent = False  # every source sent (the first `pretranslated` call)
        self.lock = threading.Lock()

    def add(self, path):
        with self.lock:
            if self.sent:
                return
            self.pending[path] = None
            if self.early and len(self.pending) >= self.SIZES[min(self.started, len(self.SIZES) - 1)]:
                self._send(list(self.pending))
                self.pending = {}
                self.started += 1

    def done(self, path):
        """The compile of `path` ended: it needs no run (if none was sent yet)."""
        with self.lock:
            self.pending.pop(path, None)

    def _send(self, paths):
        if self.pool is None:
            import concurrent.futures  # 5 ms to import, for builds whose compiles translate

            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="mlirgpu")
        run = self.pool.submit(translate_many, paths)
        self.runs.update((path, run) for path in paths)

    def pretranslated(self, path):
        """The batch translation of the source at `path` (absolute), or None."""
        with self.lock:
            if not self.sent:
                self.sent = True
                rest = [other for other in self.pending if other != path]
                if path not in self.runs:
                    self._send([path] + rest[: self.FIRST - 1])
                    rest = rest[self.FIRST - 1 :]
                jobs = max(1, min(self.jobs, len(rest) // self.SPLIT))
                for part in (rest[i::jobs] for i in range(jobs)):
                    if part:
                        self._send(part)
                self.pending = {}
        run = self.runs.get(path)
        try:
            return run.result().get(path) if run else None
        except Exception:  # noqa: BLE001 - only a head start: the compile translates, and reports, on its own
            return None
