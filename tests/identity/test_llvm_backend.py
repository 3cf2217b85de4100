"""The per-stage LLVM backend (MLIRGPU_LLVM_BACKEND): which LLVM build generates a module's ISA, as the command a
user runs shows it (the profile's tool runs), the same bytes either way, a bad value refused in one line, and the
choice in every stage's cache key."""
import json
import os
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT, instantiate

# The many_kernels module at gfx942 is above the AMDGCN threshold (its optimized bitcode about 9 KiB); saxpy's
# NVVM module far below every threshold.
LARGE = ("many_kernels.rocdl.mlir", "gfx942", "many_kernels_rocdl")
SMALL = ("saxpy.nvvm.mlir", "sm_80", "saxpy_nvvm")


def compile_isa(tmp_path, case, backend, name, cache="off"):
    """(ISA text, {tool: runs} of the profile, the command's stderr) of `mlirgpu compile --format isa`."""
    corpus, chip, stem = case
    source = instantiate(os.path.join(CORPUS, corpus), tmp_path / corpus, chip, 3)
    profile, dumps = tmp_path / f"{name}.json", tmp_path / name
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), MLIRGPU_PROFILE=str(profile),
               MLIRGPU_CACHE=cache)
    if backend is None:
        env.pop("MLIRGPU_LLVM_BACKEND", None)
    else:
        env["MLIRGPU_LLVM_BACKEND"] = backend
    done = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", str(source), "-o", str(tmp_path / f"{name}.o"),
                           "--format", "isa", "--dump-intermediates", str(dumps)], env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        return None, None, done.stderr
    tools = {}
    for line in profile.read_text().splitlines():
        for tool, (runs, _seconds) in json.loads(line).get("tools", {}).items():
            tools[tool.split("-")[0]] = tools.get(tool.split("-")[0], 0) + runs
    return (dumps / f"{stem}.isa").read_text(), tools, done.stderr


@pytest.mark.parametrize("case,auto_runs_llc", [(LARGE, True), (SMALL, False)], ids=["large", "small"])
def test_each_mode_runs_its_llvm_and_makes_the_same_isa(tmp_path, case, auto_runs_llc):
    """auto gives a large AMDGCN module to the release `llc` and keeps a small one in process; inprocess never
    runs `llc`, tools always does; the ISA is the same bytes every way."""
    made = {}
    for backend in (None, "inprocess", "tools"):
        isa, tools, stderr = compile_isa(tmp_path, case, backend, backend or "auto")
        assert isa is not None, stderr
        made[backend] = (isa, tools.get("llc", 0))
    assert made["inprocess"][1] == 0 and made["tools"][1] == 1
    assert made[None][1] == (1 if auto_runs_llc else 0)
    assert made[None][0] == made["inprocess"][0] == made["tools"][0]


def test_a_bad_value_is_one_line_naming_the_variable(tmp_path):
    isa, _tools, stderr = compile_isa(tmp_path, SMALL, "fast", "bad")
    assert isa is None
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) <= 2 and "MLIRGPU_LLVM_BACKEND='fast' is not one of auto, inprocess, tools" in lines[0], stderr
    assert "Traceback" not in stderr


def test_the_backend_is_in_every_stage_key(tmp_path, monkeypatch):
    """With one stage cache: the same mode again runs nothing; another mode misses every stage."""
    monkeypatch.setenv("MLIRGPU_CACHE_DIR", str(tmp_path / "cache"))

    def stage_origins(backend, name):
        isa, _tools, stderr = compile_isa(tmp_path, SMALL, backend, name, cache="on")
        assert isa is not None, stderr
        record = json.loads((tmp_path / name / "mlirgpu.json").read_text())
        return [state for job in record["jobs"] for state in job["stages"].values()]

    assert set(stage_origins("inprocess", "first")) == {"ran"}
    assert set(stage_origins("inprocess", "again")) == {"cached"}
    assert set(stage_origins("tools", "tools")) == {"ran"}
    assert set(stage_origins("auto", "auto")) == {"ran"}
