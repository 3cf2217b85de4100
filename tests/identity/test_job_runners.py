"""How jobs run is a seam (issue 41): a job's run gives a value (stagerunner.JobResult) that the driver folds in job
order, so the pipeline's own runner (in turn, in the compile's process) and the forked one the front ends pass
(mlirgpu.execution.fanout: forked stage runners, isolated code generation) leave the same compile; and every
fork-and-return goes through one helper (mlirgpu.execution.forks), which brings back a value, raises the child's
exception again, and tells a child's death with what it said."""
import faulthandler
import json
import os
import subprocess
import sys

import pytest

from corpusutil import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
from many_modules import write_many  # noqa: E402 - the benchmark's generator: varied modules, two chips

from mlirgpu.errors import CompileError  # noqa: E402
from mlirgpu.execution import fanout, forks  # noqa: E402


def test_a_forked_value_comes_back_whole():
    value = {"text": "é" * 10, "bytes": os.urandom(3 << 20)}  # bigger than a pipe's buffer: read as it comes
    assert forks.call(lambda: value) == value
    assert forks.call(os.getpid) != os.getpid()


def test_a_forked_exception_is_raised_again():
    def fails():
        raise CompileError("no such chip", fix="name another")

    with pytest.raises(CompileError, match="no such chip") as caught:
        forks.call(fails)
    assert caught.value.fix == "name another"


def test_a_child_that_dies_is_told_with_what_it_said(capfd):
    def aborts():
        faulthandler.disable()  # pytest's: its traceback of the abort is not what LLVM says
        os.write(2, b"LLVM ERROR: Id 7 is defined more than once\n")
        os.abort()

    with pytest.raises(forks.ChildDied, match=r"signal 6: LLVM ERROR: Id 7") as caught:
        forks.call(aborts)
    assert "LLVM ERROR" in caught.value.messages
    assert "LLVM ERROR: Id 7 is defined more than once" in capfd.readouterr().err  # its log, written here
    with pytest.raises(RuntimeError, match=r"^LLVM failed while emitting the ISA \(signal 6\): LLVM ERROR: Id 7"):
        fanout.FORKED.isolate(aborts, "emitting the ISA")


# A compile of many modules in a process of its own (as a worker runs it), with each runner, its dumps and its
# stage cache in folders of their own (so neither finds the other's entries): what each leaves, as JSON.
CHILD = r"""
import hashlib, json, os, shutil, sys

from mlirgpu.compile_options import CompileOptions
from mlirgpu.execution.fanout import FORKED
from mlirgpu.pipeline import driver, jobrunner
from mlirgpu.pipeline.planning import check_options

source, folder, fmt = sys.argv[1:4]
made = {}
for name, runner in (("in turn", jobrunner.IN_TURN), ("forked", FORKED)):
    os.environ["MLIRGPU_CACHE_DIR"] = os.path.join(folder, name, "cache")
    dumps = os.path.join(folder, "dumps")  # one folder: the record and repro.sh name it
    options = check_options(source, CompileOptions(format=fmt, dump_dir=dumps, toolkit=sys.argv[4]))
    result = driver.compile_source(source, options, runner=runner)
    events = [{key: value for key, value in event.items() if key not in ("ts", "dur", "pid", "tid")}
              for event in result.trace]
    files = {}
    for name_ in sorted(os.listdir(dumps)):
        with open(os.path.join(dumps, name_), "rb") as handle:
            data = handle.read()
        files[name_] = hashlib.sha256(data).hexdigest()
    made[name] = {"object": hashlib.sha256(result.object_bytes).hexdigest(), "stages": result.stages,
                  "timings": sorted(result.timings), "dependencies": result.dependencies, "trace": events,
                  "warnings": [str(w) for w in result.warnings + result.cache_warnings], "dumps": files,
                  "processes": len({event["tid"] for event in result.trace if event["cat"] == "stage"})}
    shutil.rmtree(dumps)
print(json.dumps(made))
"""


@pytest.mark.parametrize("fmt", ["isa", "bin"])
def test_in_turn_and_forked_runners_leave_the_same_compile(tmp_path, cuda_root, fmt):
    source = write_many(str(tmp_path / "many.mlir"), fanout.MIN_JOBS * 2)
    run = subprocess.run([sys.executable, "-c", CHILD, source, str(tmp_path), fmt, cuda_root], capture_output=True,
                         text=True, timeout=600, cwd=str(tmp_path),
                         env=dict(os.environ, MLIRGPU_COMPILE_PROCESSES="2", MLIRGPU_CACHE="on",
                                  PYTHONPATH=os.path.join(ROOT, "site_scons")))
    assert run.returncode == 0, run.stderr[-3000:]
    in_turn, forked = json.loads(run.stdout)["in turn"], json.loads(run.stdout)["forked"]
    assert in_turn["processes"] == 1 and forked["processes"] > 2, "the forked runner ran no stage runners"
    for part in ("object", "stages", "timings", "dependencies", "trace", "warnings", "dumps"):
        assert in_turn[part] == forked[part], part
    assert {state for job in forked["stages"].values() for state in job.values()} == {"ran"}


def test_the_in_turn_runner_refuses_isolated_code_generation_with_the_fix(tmp_path):
    """LLVM 22's SPIR-V back end would give a second module of one process wrong bytes, not an error: the
    pipeline's own runner, which cannot isolate, refuses an XeVM compile and names the runner that can."""
    from mlirgpu import CompileOptions
    from mlirgpu.pipeline import driver
    from mlirgpu.pipeline.planning import check_options

    from corpusutil import CORPUS, instantiate

    source = instantiate(os.path.join(CORPUS, "atomics_cas.xevm.mlir"), tmp_path / "cas.mlir", "pvc", 2)
    options = check_options(source, CompileOptions(format="bin"))
    with pytest.raises(CompileError) as refused:
        driver.compile_source(source, options)
    assert "must run isolated" in str(refused.value)
    assert "runner=mlirgpu.execution.fanout.FORKED" in refused.value.fix
    assert refused.value.file == source
    forked = driver.compile_source(source, options, runner=fanout.FORKED)
    assert forked.binaries and all(item.data[:4] == b"\x03\x02\x23\x07" for item in forked.binaries)  # SPIR-V magic
