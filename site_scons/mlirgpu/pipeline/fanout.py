"""The jobs of a file of many modules, run by forked stage runners: each a fork of the compile's process that runs
the stages of a chunk of consecutive jobs, sends back what they made and ends; as many at a time as the compile
may keep busy (mlirgpu.llvm.process.compile_processes).

Why forks: a file's jobs are independent, so two CPUs run them in about half the time; and LLVM keeps memory of
every module a process optimized even after the job's arena closed its objects (llvmlite's pass builder leaves
its instrumentation callbacks allocated, about 66 KB per module), so one process compiling 10,000 modules would
grow by 650 MB. A runner forked per chunk ends with what LLVM kept; it starts with LLVM loaded and the
translations in memory, in pages it shares with the compile's process.

What a runner sends back is what running its jobs here would have left: their outputs (where the compile spools,
a spooled job's embedded bytes in the runner's spool file instead: mlirgpu.pipeline.spool), and its `Compile` share
(where each stage's output came from, stage times, trace events, libraries, cache payloads), the dumps it wrote
with their hashes, its tool statistics. The compile's process adds them in job order, so the record, the dumps
and the object are those of running the jobs in turn. A runner that fails (a CompileError, an LLVM abort that
ends it) ends the fan-out: the jobs from the first of its chunk run here, in turn, as without runners, so the
compile fails, and says where, exactly as it would have.
"""
import ctypes
import gc
import os
import pickle
import select
import signal

from . import stagerunner
from ..llvm import arena as llvm_arena, process
from ..util.heap import release_free_memory

MIN_JOBS = 64  # fewer jobs run here in turn: forking and merging would cost more than the second CPU saves
CHUNK_JOBS = (16, 128)  # jobs per runner, at least and at most (what LLVM keeps of a chunk: 8 MB at most)
_PR_SET_PDEATHSIG = 1


def run_jobs(compile_, jobs, llvm_irs, dumps):
    """{job id: stagerunner.JobOutput} of `jobs` from their modules' LLVM IR (`llvm_irs`); `dumps`: the dump
    folder, or None. Sets `compile_.llvm_modules`: the most LLVM modules its processes held at once (at most)."""
    runners = process.compile_processes()
    outputs = {}
    done = 0
    llvm_arena.reset_module_peak()
    if runners > 1 and len(jobs) >= MIN_JOBS:
        size = min(CHUNK_JOBS[1], max(CHUNK_JOBS[0], -(-len(jobs) // (4 * runners))))
        done = _Fan(compile_, llvm_irs, dumps).run([jobs[i : i + size] for i in range(0, len(jobs), size)], runners,
                                                   outputs)
    for job in jobs[done:]:
        outputs[job.id] = stagerunner.run_job(compile_, job, llvm_irs[job.module.name])
    compile_.llvm_modules = max(compile_.llvm_modules, llvm_arena.module_peak())
    return outputs


class _Fan:
    """The forked runners of one compile's jobs."""

    def __init__(self, compile_, llvm_irs, dumps):
        self.compile = compile_
        self.llvm_irs = llvm_irs
        self.dumps = dumps
        self.running = {}  # read end of a runner's pipe -> [chunk index, pid, the bytes it sent so far]
        self.poll = select.poll()

    def run(self, chunks, runners, outputs):
        """Run `chunks`, `runners` at a time, adding their jobs' outputs to `outputs` in order; how many jobs, from
        the first, came back (all, or those of the chunks before the first whose runner failed)."""
        from ..llvm import ops  # noqa: F401 - LLVM loaded here once, in pages every runner shares

        compile_ = self.compile
        compile_.scratch  # noqa: B018 - made here, removed with the compile (a runner's own would outlive it)
        compile_.report(f"{compile_.source}: the stages of {sum(map(len, chunks))} jobs, in forked runners",
                        (compile_.source, None))
        release_free_memory()  # what reading and translating the file freed: no runner inherits it
        finished = {}  # chunk index -> what its runner sent, or None when it failed
        started = added = done = at_once = most = 0
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
                    done += self._add(chunks[added], finished.pop(added), outputs)
                    added += 1
        finally:
            for fd, (_index, pid, _data) in self.running.items():  # only when this process is interrupted
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(fd)
            if self.running and self.dumps:
                self.dumps.remove_temps()  # a killed runner may have been writing a dump
        compile_.llvm_modules = max(compile_.llvm_modules, most * at_once)
        release_free_memory()  # the runners' answers, read and merged
        return done

    def _start(self, index, chunk):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            self._runner(chunk, write_fd)  # never returns
        os.close(write_fd)
        self.running[read_fd] = [index, pid, []]
        self.poll.register(read_fd, select.POLLIN)

    def _read(self, fd):
        """(chunk index, what its runner sent or None when it failed) once its runner ended, else (None, None)."""
        data = os.read(fd, 1 << 20)
        entry = self.running[fd]
        if data:
            entry[2].append(data)
            return None, None
        del self.running[fd]
        self.poll.unregister(fd)
        os.close(fd)
        _, status = os.waitpid(entry[1], 0)
        return entry[0], pickle.loads(b"".join(entry[2])) if status == 0 else None

    def _runner(self, chunk, write_fd):
        """A forked runner: its chunk's stages, then what they made on `write_fd`; it never returns."""
        status = 1
        try:
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # ends with the compile's process
            for fd in self.running:
                os.close(fd)
            gc.disable()  # nothing to collect that ends before the process does; the parent's pages stay shared
            process.forget_suppliers()
            compile_ = self.compile
            compile_.report = lambda what, where: None  # the caller's pipe is the compile's; a failure runs again
            compile_.begin_share()
            if self.dumps:
                self.dumps.hashes, self.dumps.seconds = {}, 0.0
            process.tool_stats.set({})
            llvm_arena.reset_module_peak()
            keep = compile_.spool.kept if compile_.spool else lambda compile_, job, output: output
            outputs = [keep(compile_, job, stagerunner.run_job(compile_, job, self.llvm_irs[job.module.name]))
                       for job in chunk]
            sent = {"outputs": outputs, "share": compile_.share(), "tools": process.tool_stats.get(),
                    "dumps": (self.dumps.hashes, self.dumps.seconds) if self.dumps else None,
                    "llvm_modules": llvm_arena.module_peak()}
            view = memoryview(pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL))
            while view:
                view = view[os.write(write_fd, view) :]
            status = 0
        except BaseException:  # noqa: BLE001 - the compile's process runs this chunk again, and says what failed
            status = 1
        finally:
            os._exit(status)

    def _add(self, chunk, sent, outputs):
        """Add what a runner sent, as if its chunk had run here; the number of its jobs."""
        outputs.update((job.id, output) for job, output in zip(chunk, sent["outputs"]))
        self.compile.add_share(sent["share"])
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
        return len(chunk)
