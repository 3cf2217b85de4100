"""LLVM objects have owners, not finalizers: under garbage-collector pressure, with reference cycles around every
stage call and jobs that fail halfway, a process compiling as a worker does (the pipeline in one process, LLVM
loaded once) neither crashes nor leaves a llvmlite object of a job open once the job has ended, and builds the
same bytes as a compile without that pressure.

Before each job's objects were closed in a fixed order by its arena (mlirgpu.llvm.arena), the collector ran the
finalizers of a job's context and modules in its own order and the process died in `LLVMPY_DisposeModule`."""
import hashlib
import json
import os
import subprocess
import sys

from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu import CompileOptions, compile_file

# Several targets, device libraries linked (libdevice, ocml with control constants, user bitcode), several
# modules per file, host code (the host object's own LLVM objects).
FILES = (("saxpy.nvvm.mlir", "sm_80"), ("math_libdevice.nvvm.mlir", "sm_90"), ("host_pipeline.nvvm.mlir", "sm_80"),
         ("math_ocml.rocdl.mlir", "gfx90a"), ("multi_kernel.rocdl.mlir", "gfx942"),
         ("saxpy.xevm.mlir", "pvc"), ("multi_module.xevm.mlir", "bmg"), ("link_files.xevm.mlir", "pvc"))

# The stressed process: the collector runs after every allocation; every stage's input and output are kept in
# reference cycles, with an exception whose frames hold them; the first job of each file fails after its `opt.ll`
# stage ran, and that error is kept in a cycle too. After each job (ended or failed) it counts the llvmlite
# objects that own LLVM memory and are still open, and the arenas' own counts.
CHILD = r"""
import dataclasses, gc, hashlib, json, sys

from llvmlite.binding import context, ffi
from mlirgpu import CompileError, CompileOptions
from mlirgpu.execution.fanout import FORKED  # code generation isolated, as a worker runs it
from mlirgpu.llvm import arena as llvm_arena
from mlirgpu.pipeline import driver, stagerunner, stages
from mlirgpu.pipeline.planning import check_options

kept = []
failing = set()


def cyclic(run, suffix):
    def wrapped(compile_, job, given):
        loop = [given, compile_, job]
        loop.append(loop)
        output = run(compile_, job, given)
        try:
            if suffix == "opt.ll" and compile_.source in failing:
                failing.discard(compile_.source)
                raise RuntimeError("injected failure after the stage ran")
            raise KeyError("kept with its frame")
        except KeyError as exc:
            caught = exc
        back = [output, caught, loop]
        back.append(back)
        return output
    return wrapped


def unclosed():
    return sum(1 for obj in gc.get_objects()
               if isinstance(obj, ffi.ObjectRef) and not obj.closed and not isinstance(obj, context.GlobalContextRef)
               and type(obj)._dispose is not ffi.ObjectRef._dispose)


arenas = []
enter = llvm_arena.Arena.__enter__
llvm_arena.Arena.__enter__ = lambda self: arenas.append(self) or enter(self)
run_job = stagerunner.run_job
after_jobs = []


def checked_run_job(compile_, job, llvm_ir):
    try:
        return run_job(compile_, job, llvm_ir)
    finally:
        after_jobs.append([job.id, unclosed(), sum(arena.open_count() for arena in arenas)])


stagerunner.run_job = checked_run_job
stages.STAGES = tuple(dataclasses.replace(stage, run=cyclic(stage.run, stage.suffix)) for stage in stages.STAGES)
gc.set_threshold(1)
results = []
for source, options in json.loads(sys.argv[1]):
    options = check_options(source, CompileOptions(**options))
    failing.add(source)
    try:
        driver.compile_source(source, options, runner=FORKED)
        results.append([source, "the injected failure was not reported"])
    except CompileError as exc:
        exc.kept = exc
        kept.append(exc)
    result = driver.compile_source(source, options, runner=FORKED)
    results.append([source, hashlib.sha256(result.object_bytes).hexdigest()])
print(json.dumps({"results": results, "after_jobs": after_jobs, "arenas": len(arenas)}))
"""


def test_jobs_close_their_llvm_objects_under_collector_pressure(tmp_path, cuda_root):
    compiles, expected = [], []
    for name, chip in FILES:
        source = instantiate(os.path.join(CORPUS, name), tmp_path / name, chip, 2)
        options = {"format": "bin", "toolkit": cuda_root if ".nvvm." in name else ""}
        compiles.append([source, options])
        expected.append([source, hashlib.sha256(compile_file(source, CompileOptions(**options)).object_bytes)
                         .hexdigest()])
    run = subprocess.run([sys.executable, "-c", CHILD, json.dumps(compiles)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300,
                         env=dict(os.environ, MLIRGPU_CACHE="off", PYTHONPATH=os.path.join(ROOT, "site_scons")))
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    report = json.loads(run.stdout)
    assert report["results"] == expected
    assert report["arenas"] >= len(report["after_jobs"]) > 2 * len(FILES)
    left_open = [entry for entry in report["after_jobs"] if entry[1:] != [0, 0]]
    assert left_open == []


def test_many_modules_never_hold_more_than_a_few_llvm_modules_at_once(tmp_path, cuda_root):
    """A file of many modules (issue #33): the most LLVM modules its compile held open at once, counted by the
    arenas of every process that ran its stages (the compile's own and its forked stage runners), is the same
    for 128 modules as for 600, and at most two per process (a job's module; the host object's)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from many_modules import write_many

    held = {}
    for count in (128, 600):
        source = write_many(str(tmp_path / f"many{count}.mlir"), count)
        profile = tmp_path / f"profile{count}.jsonl"
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "many.o"),
                              "--format", "isa", "--toolkit", cuda_root], capture_output=True, text=True, timeout=600,
                             env=dict(os.environ, MLIRGPU_CACHE="off", MLIRGPU_SERVER="off",
                                      MLIRGPU_PROFILE=str(profile), MLIRGPU_COMPILE_PROCESSES="2",
                                      PYTHONPATH=os.path.join(ROOT, "site_scons")))
        assert run.returncode == 0, run.stderr
        (line,) = profile.read_text().splitlines()
        held[count] = json.loads(line)["llvm_modules"]
    assert held[128] == held[600]
    assert 0 < held[600] <= 2 * 2
