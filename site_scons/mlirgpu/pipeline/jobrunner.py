"""How a compile's jobs run: a seam, like the translator (mlirgpu.pipeline.translation).

A runner is an object with two methods:

    run_jobs(compile_, jobs, llvm_irs, dumps, fold)   -> the most LLVM modules its processes held at once
    isolate(produce, what)                            -> produce()'s value, computed apart from this process's state

`run_jobs` calls `fold(job, result)` with each job's stagerunner.JobResult, in job order, as soon as it has it
(so a compile of many jobs never holds every job's result at once: issue 40).

The pipeline's own (`IN_TURN`) runs the jobs one after another in this process and refuses to isolate. The
speed machinery lives above the pipeline (mlirgpu.execution.fanout: jobs in forked stage runners, code
generation in a forked child), and its front ends pass it as `runner=`; the pipeline itself never forks.

Whichever runner ran them, the driver folds the jobs' results into the compile in job order (`run_jobs` here),
so the origins, trace, timings, payloads, libraries and warnings are the same as running them in turn. The
number returned is the most LLVM modules the runner's processes held at once (at most), for the benchmarks.
"""
from . import stagerunner
from ..errors import CompileError
from ..llvm import arena as llvm_arena


class InTurn:
    """The jobs one after another in this process. It cannot isolate: code generation that must run apart
    (LLVM 22's SPIR-V back end, mlirgpu.llvm.ops.emit_assembly) would come out wrong here, not fail, so it is
    refused with the fix (a runner that forks, mlirgpu.execution.fanout, which every front end passes)."""

    def run_jobs(self, compile_, jobs, llvm_irs, dumps, fold):
        llvm_arena.reset_module_peak()
        for job in jobs:
            fold(job, stagerunner.run_job(compile_, job, llvm_irs[job.module.name]))
        return llvm_arena.module_peak()

    def isolate(self, produce, what):
        raise CompileError(f"{what}: this target's code generation must run isolated from the process's earlier "
                           "LLVM work (LLVM 22's SPIR-V back end keeps module state between compiles), and the "
                           "pipeline's in-turn job runner cannot isolate it",
                           fix="compile through mlirgpu.compile_file / compile_to_object, the CLI or SCons, or "
                               "pass runner=mlirgpu.execution.fanout.FORKED to mlirgpu.pipeline.driver")


IN_TURN = InTurn()


def run_jobs(compile_, jobs, llvm_irs, dumps):
    """{job id: stagerunner.JobOutput} of `jobs` run by the compile's runner, each job's result folded into the
    compile in job order; `dumps`: the dump folder, or None."""
    outputs = {}

    def fold(job, result):
        if len(outputs) == len(jobs) or job is not jobs[len(outputs)]:
            raise RuntimeError(f"the job runner gave job {job.id} out of order")  # a runner's bug
        compile_.fold(job, result)
        outputs[job.id] = result.output

    llvm_modules = compile_.runner.run_jobs(compile_, jobs, llvm_irs, dumps, fold)
    if len(outputs) != len(jobs):
        raise RuntimeError(f"the job runner gave {len(outputs)} of {len(jobs)} jobs")
    compile_.llvm_modules = max(compile_.llvm_modules, llvm_modules)
    return outputs
