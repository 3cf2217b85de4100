"""Bad input through the CLI and SCons: one clear line naming the file (and line), exit code 1, nothing left
that a later build would take as up to date. The cases are listed in tests/bad_inputs.py (and the README)."""
import os
import re
import subprocess
import sys

import pytest

from bad_inputs import CASES, CLI_ONLY
from conftest import ROOT
from sconsutil import TOOLPATH

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))


def _materialise(tmp_path, name, content):
    source = tmp_path / f"{name}.mlir"
    if content == "<dir>":
        source.mkdir()
    elif isinstance(content, bytes):
        source.write_bytes(content)
    elif content is not None:
        source.write_text(content)
    (tmp_path / "corrupt.bc").write_bytes(b"BC\xc0\xde this is not bitcode")
    (tmp_path / "empty-toolkit").mkdir(exist_ok=True)
    (tmp_path / "blocker").write_text("a file where a folder is expected")
    return source


def _fill(value, tmp_path):
    return value.replace("{tmp}", str(tmp_path)) if isinstance(value, str) else value


@pytest.mark.parametrize("name", sorted(CASES) + sorted(CLI_ONLY))
def test_cli(name, tmp_path):
    content, args, _overrides, expected, line = {**CASES, **CLI_ONLY}[name]
    source = _materialise(tmp_path, name, content)
    args = [_fill(a, tmp_path) for a in args]
    output = tmp_path / "out.o"
    if "-o" in args:
        output = tmp_path / "never-written.o"
    else:
        output.write_bytes(b"stale object from an earlier build")
        args = ["-o", str(output), *args]
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", str(source), *args], capture_output=True,
                         text=True, env=ENV, cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    errors = [l for l in run.stderr.splitlines() if l.startswith("mlirgpu: ") and "error:" in l]
    assert len(errors) == 1, run.stderr
    assert "Traceback" not in run.stderr
    if line == "no-file":  # the fault is the output path, which the message names
        prefix = "mlirgpu: error: cannot write"
    else:
        prefix = f"mlirgpu: {source}:{line}: error:" if line else f"mlirgpu: {source}"
    assert errors[0].startswith(prefix), errors[0]
    assert expected in errors[0], errors[0]
    assert not output.exists()
    assert not (tmp_path / "pwned").exists()


def test_scons(tmp_path):
    """Every case as a target of one SCons build under -k: each fails with its message; none is up to date next
    time; a good source beside them still builds."""
    lines = [f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}], GPU_CHIP='sm_80')",
             "env.GpuObject('good', 'good.mlir')"]
    for name, (content, _args, overrides, _expected, _line) in sorted(CASES.items()):
        _materialise(tmp_path, name, content)
        settings = {key: _fill(value, tmp_path) for key, value in overrides.items()}
        lines.append(f"env.GpuObject({name!r}, {name + '.mlir'!r}, **{settings!r})")
    (tmp_path / "SConstruct").write_text("\n".join(lines) + "\n")
    (tmp_path / "good.mlir").write_text(CASES["unknown_op"][0].replace("llvm.frobnicate %x : f32", ""))
    for attempt in range(2):
        run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "scons"), "-Q", "-k", "DUMP=1"],
                             cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode != 0
        for name, (_content, _args, _overrides, expected, line) in CASES.items():
            found = re.findall(rf"^scons: \*\*\* \[{name}\.o\] (.*)$", run.stderr, re.M)
            assert len(found) == 1, f"{name}: {run.stderr}"
            where = f"{name}.mlir:{line}: error:" if line else f"{name}.mlir"
            assert found[0].startswith(where) and expected in found[0], found[0]
            assert not (tmp_path / f"{name}.o").exists()
        assert "Traceback" not in run.stderr
        assert (tmp_path / "good.o").exists()
        assert not (tmp_path / "pwned").exists()


def test_scons_missing_library_is_named(tmp_path):
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "env.GpuObject('k', 'k.mlir', GPU_LINKLIBS=['missing.bc'])\n")
    (tmp_path / "k.mlir").write_text(CLI_ONLY["missing_library"][0])
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "scons"), "-Q"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode != 0 and "`missing.bc' not found, needed by target `k.o'" in run.stderr
    assert not (tmp_path / "k.o").exists()
