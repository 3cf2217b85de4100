"""A file of many modules (issue #33): its jobs run in forked stage runners (mlirgpu.execution.fanout), and what
comes out is what running them in turn in one process gives, and what upstream gives.

- 2000 varied NVVM modules (four kernel bodies, libdevice calls among them, two chips, O0-O3) compiled to ISA:
  every module's embedded PTX equals upstream `mlir-opt --gpu-module-to-binary=format=isa`'s object, and the
  stages ran in more than one runner process, none of which ran more than a chunk of jobs.
- The same file compiled with one process and with two: the same object, the same dumps and record byte for byte,
  also for format `bin` (ptxas runs in the runners).
- An LLVM abort in a module halfway through the file ends the compile with the same message either way.
"""
import os
import re
import subprocess
import sys

import pytest

import oracle
from corpusutil import ROOT
from mlirgpu import CompileOptions, compile_file
from mlirgpu.execution import fanout

sys.path.insert(0, os.path.join(ROOT, "bench"))
from many_modules import write_many  # noqa: E402 - the benchmark's generator: the modules the figures are of


def _runner_jobs(result):
    """{process id: how many jobs' stages it ran}, from the compile's trace."""
    jobs = {}
    for event in result.trace:
        if event["cat"] == "stage":
            jobs.setdefault(event["tid"], set()).add(event["args"]["module"])
    return {pid: len(modules) for pid, modules in jobs.items()}


def test_two_thousand_modules_match_upstream(tmp_path, cuda_root, monkeypatch):
    monkeypatch.setenv("MLIRGPU_COMPILE_PROCESSES", "2")
    source = write_many(str(tmp_path / "many.mlir"), 2000)
    result = compile_file(source, CompileOptions(format="isa", toolkit=cuda_root))
    upstream = oracle.upstream_objects(source, "isa", cuda_root)
    assert len(upstream) == len(result.binaries) == 2000
    for item, (attr, blob) in zip(result.binaries, upstream):
        assert item.data == blob + b"\0", f"@{item.module} differs from upstream format=isa for {attr}"
    runners = _runner_jobs(result)
    assert len(runners) > 2, "the stages did not run in forked runners"
    assert max(runners.values()) <= fanout.CHUNK_JOBS[1]


def _compile_cli(source, output, dumps, processes, fmt, cuda_root):
    env = dict(os.environ, MLIRGPU_SERVER="off", MLIRGPU_CACHE="off", MLIRGPU_COMPILE_PROCESSES=str(processes))
    return subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", output, "--format", fmt,
                           "--toolkit", cuda_root, "--dump-intermediates", dumps], capture_output=True, text=True,
                          env=env, timeout=600)


def _folder(path):
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


@pytest.mark.parametrize("fmt,count", [("isa", 300), ("bin", fanout.MIN_JOBS)])
def test_runners_leave_what_one_process_leaves(tmp_path, cuda_root, fmt, count):
    source = write_many(str(tmp_path / "many.mlir"), count)
    made = []
    for processes in (1, 2):
        dumps = tmp_path / f"dumps{processes}"
        run = _compile_cli(source, str(tmp_path / "many.o"), str(dumps), processes, fmt, cuda_root)
        assert run.returncode == 0, run.stderr
        made.append(((tmp_path / "many.o").read_bytes(), _folder(dumps)))
    (object_1, dumps_1), (object_2, dumps_2) = made
    assert object_1 == object_2
    assert len(dumps_1) > 4 * count and "mlirgpu.json" in dumps_1
    assert dumps_1 == dumps_2  # the record too: its dumps' hashes, the jobs' stages, tool logs, warnings


def test_an_llvm_abort_in_a_runner_is_reported_as_in_one_process(tmp_path, cuda_root):
    source = tmp_path / "many.mlir"
    write_many(str(source), 200)
    header = r"(gpu\.module @m150 \[#nvvm\.target<[^>]*)>"
    text, count = re.subn(header, r'\1, features = "+ptx50">', source.read_text())
    assert count == 1
    source.write_text(text)
    said = []
    for processes in (1, 2):
        run = _compile_cli(str(source), str(tmp_path / "many.o"), str(tmp_path / "dumps"), processes, "isa", cuda_root)
        assert run.returncode == 1
        said.append(run.stderr.strip())
    assert said[0] == said[1]
    assert "module @m150 (nvvm sm_" in said[0] and "PTX version 5.0 does not support target" in said[0]
