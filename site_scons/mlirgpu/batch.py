"""Translating many sources in few mlir-translate runs (a process start-up costs more than translating a typical
module), ahead of their compiles: a build tool names the sources it is about to compile while it still reads
its build files, batches start in the background, and each compile takes its source's translation, or
translates on its own when there is none (so this only ever saves time)."""
import concurrent.futures
import threading

from .errors import CompileError
from .mlirtools import translate_pieces
from .scan import direct_source, pieces_key


def translate_many(paths, at_least=2):
    """Translate the gpu.modules of many sources in one mlir-translate run. Only sources cut directly from
    their text join (scan.direct_source), and only when at least `at_least` do; returns {path: (pieces key,
    {module: LLVM IR})}. Any failure returns {}: each compile then translates, and reports, on its own."""
    batch = []
    for path in paths:
        loaded = direct_source(path, None)
        if loaded is not None:
            batch.append((path, loaded.modules))
    if not batch or len(batch) < at_least:
        return {}
    try:
        irs = translate_pieces([module.text for _path, modules in batch for module in modules], "<batch>")
    except CompileError:
        return {}
    result = {}
    for path, modules in batch:
        result[path] = (pieces_key(modules), {m.name: ir for m, ir in zip(modules, irs)})
        irs = irs[len(modules):]
    return result


class Batches:
    """Background batches for a build of `jobs` parallel compiles. Sources are added as the build declares
    them; full batches start at once, the first `pretranslated` call sends off the rest (split over the jobs),
    and each compile waits only for the run holding its source."""

    SIZES = (8, 32)  # the first run is small, so the first compiles find theirs done early
    SPLIT = 4  # the rest is split over the build jobs in parts of at least this many sources

    def __init__(self, jobs):
        self.jobs = jobs
        self.sent = 0
        self.pending = []
        self.runs = {}
        self.pool = None
        self.flushed = False
        self.lock = threading.Lock()

    def add(self, path):
        with self.lock:
            self.pending.append(path)
            if len(self.pending) >= self.SIZES[min(self.sent, len(self.SIZES) - 1)]:
                self._send(self.pending)
                self.pending = []

    def _send(self, paths):
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="mlirgpu")
        run = self.pool.submit(translate_many, paths)
        self.sent += 1
        self.runs.update((path, run) for path in paths)

    def pretranslated(self, path):
        """The batch translation of the source at `path` (absolute), or None."""
        with self.lock:
            if not self.flushed:
                jobs = max(1, min(self.jobs, len(self.pending) // self.SPLIT))
                for part in (self.pending[i::jobs] for i in range(jobs)):
                    if part:
                        self._send(part)
                self.pending = []
                self.flushed = True
        run = self.runs.get(path)
        try:
            return run.result().get(path) if run else None
        except Exception:  # noqa: BLE001 - only a head start: the compile translates, and reports, on its own
            return None
