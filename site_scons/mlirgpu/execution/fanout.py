"""The forked job runner (`FORKED`, a mlirgpu.pipeline.jobrunner runner, which the front ends' workers pass the
pipeline): the jobs of a file of many modules run by forked stage runners, each a fork of the compile's process
that runs the stages of a chunk of consecutive jobs, sends back their results and ends; as many at a time as the
compile may keep busy (mlirgpu.llvm.process.compile_processes). Code generation that must run isolated
(`isolate`) runs in a forked child of its own. Both fork through mlirgpu.execution.forks.

Why forks: a file's jobs are independent, so two CPUs run them in about half the time; and LLVM keeps memory of
every module a process optimized even after the job's arena closed its objects (llvmlite's pass builder leaves
its instrumentation callbacks allocated, about 66 KB per module), so one process compiling 10,000 modules would
grow by 650 MB. A runner forked per chunk ends with what LLVM kept; it starts with LLVM loaded and the
translations in memory, in pages it shares with the compile's process.

What a runner sends back is its jobs' results (stagerunner.JobResult: values, which the driver folds in job order
as it folds those of jobs run in turn, each runner's as it arrives, so the compile's process never holds every
job's result; where the compile spools, a job's embedded bytes go to the runner's spool file as the job ends and
its result says where: mlirgpu.pipeline.spool), and what its process did besides: the dumps it wrote with their
hashes, its tool statistics, the most LLVM modules it held. A runner that fails (a CompileError, an LLVM
abort that ends it) ends the fan-out: the jobs from the first of its chunk run here, in turn, as without runners,
so the compile fails, and says where, exactly as it would have.
"""
import gc
import select

from . import forks
from ..llvm import arena as llvm_arena, process
from ..cache import stagecache
from ..pipeline import jobrunner
from ..util.heap import release_free_memory

MIN_JOBS = 64  # fewer jobs run here in turn: forking and merging would cost more than the second CPU saves
CHUNK_JOBS = (16, 128)  # jobs per runner, at least and at most (what LLVM keeps of a chunk: 8 MB at most)


class Forked:
    """Jobs in forked stage runners (a file of MIN_JOBS jobs or more, with two processes or more), else in turn;
    isolated code generation in a forked child."""

    def run_jobs(self, compile_, jobs, llvm_irs, dumps, fold):
        runners = process.compile_processes()
        folded, most = 0, 0
        if runners > 1 and len(jobs) >= MIN_JOBS:
            size = min(CHUNK_JOBS[1], max(CHUNK_JOBS[0], -(-len(jobs) // (4 * runners))))
            folded, most = _Fan(compile_, llvm_irs, dumps, fold).run(
                [jobs[i : i + size] for i in range(0, len(jobs), size)], runners)
        here = jobrunner.IN_TURN.run_jobs(compile_, jobs[folded:], llvm_irs, dumps, fold)
        return max(most, here)

    def isolate(self, produce, what):
        """`produce()` in a forked child: it starts from this process's state before the work and leaves it
        untouched. LLVM's messages from it (a fatal `LLVM ERROR: ...` ends it) become the RuntimeError raised
        here, as LLVM's diagnostics do in this process."""
        try:
            return forks.call(produce)
        except forks.ChildDied as exc:
            first = next((line for line in exc.messages.splitlines() if line.strip()), "")
            raise RuntimeError(f"LLVM failed while {what} ({exc.how})" + (f": {first}" if first else "")) from None


FORKED = Forked()


class _Fan:
    """The forked runners of one compile's jobs."""

    def __init__(self, compile_, llvm_irs, dumps, fold):
        self.compile = compile_
        self.llvm_irs = llvm_irs
        self.dumps = dumps
        self.fold = fold  # the driver's: each job's result, in job order
        self.running = {}  # read end of a runner's pipe -> (chunk index, its forks.Child)
        self.poll = select.poll()

    def run(self, chunks, runners):
        """Run `chunks`, `runners` at a time, folding their jobs' results in order from the first up to the first
        chunk whose runner failed: (how many jobs were folded; the most LLVM modules the runners held at once, at
        most)."""
        from ..llvm import ops  # noqa: F401 - LLVM loaded here once, in pages every runner shares

        compile_ = self.compile
        compile_.scratch  # noqa: B018 - made here, removed with the compile (a runner's own would outlive it)
        compile_.report(f"{compile_.source}: the stages of {sum(map(len, chunks))} jobs, in forked runners",
                        (compile_.source, None))
        release_free_memory()  # what reading and translating the file freed: no runner inherits it
        finished = {}  # chunk index -> what its runner sent, or None when it failed
        started = added = folded = at_once = most = 0
        collecting = gc.isenabled()
        gc.disable()  # a collection here writes to every page of this process's objects, which the runners share
        try:
            while self.running or (started < len(chunks) and None not in finished.values()):
                while len(self.running) < runners and started < len(chunks) and None not in finished.values():
                    self._start(started, chunks[started])
                    started += 1
                at_once = max(at_once, len(self.running))
                for fd, _event in self.poll.poll():
                    index, sent = self._read(fd)
                    if index is not None:
                        finished[index] = sent
                        most = max(most, sent["llvm_modules"] if sent else 0)
                while finished.get(added) is not None:
                    folded += self._add(chunks[added], finished.pop(added))
                    added += 1
        finally:
            if collecting:
                gc.enable()
            for _index, child in self.running.values():  # only when this process is interrupted: the compile
                child.kill()  # then removes the temp files of the dumps they were writing (pipeline.driver)
        release_free_memory()  # the runners' answers, read and folded
        return folded, most * at_once

    def _start(self, index, chunk):
        child = forks.Child(lambda: self._runner(chunk), close=list(self.running))
        self.running[child.fd] = (index, child)
        self.poll.register(child.fd, select.POLLIN)

    def _read(self, fd):
        """(chunk index, what its runner sent or None when it failed) once its runner ended, else (None, None)."""
        index, child = self.running[fd]
        if not child.read():
            return None, None
        del self.running[fd]
        self.poll.unregister(fd)
        try:
            return index, child.result()
        except Exception:  # noqa: BLE001 - the compile's process runs this chunk again, and says what failed
            return index, None

    def _runner(self, chunk):
        """In a forked runner: its chunk's job results, and what its process did besides."""
        process.forget_suppliers()
        compile_ = self.compile
        compile_.report = lambda what, where: None  # the caller's pipe is the compile's; a failure runs again
        compile_.cache = stagecache.open_cache(compile_.warn)  # its counts its own; the remote tier reconnects
        if self.dumps:
            self.dumps.hashes, self.dumps.seconds = {}, 0.0
        process.tool_stats.set({})
        results = []  # the embedded bytes go to this runner's spool file as each job ends (mlirgpu.pipeline.spool)
        kept = compile_.spool.kept if compile_.spool else lambda job, result: result
        most = jobrunner.IN_TURN.run_jobs(compile_, chunk, self.llvm_irs, self.dumps,
                                          lambda job, result: results.append(kept(job, result)))
        if compile_.cache:
            compile_.cache.flush()
        return {"results": results, "tools": process.tool_stats.get(), "llvm_modules": most,
                "dumps": (self.dumps.hashes, self.dumps.seconds) if self.dumps else None}

    def _add(self, chunk, sent):
        """Fold a runner's job results, and add what its process did besides, as if its chunk had run here; how
        many jobs it ran."""
        if self.dumps:
            hashes, seconds = sent["dumps"]
            self.dumps.hashes.update(hashes)
            self.dumps.seconds += seconds
        stats = process.tool_stats.get()
        if stats is not None:
            for name, (runs, seconds, path) in sent["tools"].items():
                entry = stats.setdefault(name, [0, 0.0, path])
                entry[0] += runs
                entry[1] += seconds
        for job, result in zip(chunk, sent["results"], strict=True):
            self.fold(job, result)
        return len(chunk)
