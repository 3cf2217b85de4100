"""A target defined outside the package (MLIRGPU_TARGETS) runs through planning, the CLI and the SCons emitter
without a change to the package; one that cannot load is one error line."""
import json
import os
import re
import subprocess
import sys

from corpusutil import CORPUS, ROOT
from sconsutil import SCONS, TOOLPATH

TESTS = os.path.join(ROOT, "tests")  # the shared helpers (toy_target.py)
ENV = dict(os.environ, MLIRGPU_TARGETS="toy_target",
           PYTHONPATH=os.pathsep.join([TESTS, os.path.join(ROOT, "site_scons")]))


def test_a_target_defined_outside_the_package(tmp_path):
    """tests/toy_target.py (a variant of an existing target) registered through MLIRGPU_TARGETS: planned by the
    CLI, compiled by the CLI, declared and built by SCons, without a change to the package."""
    source = os.path.join(CORPUS, "vecadd.neutral.mlir")
    listed = subprocess.run([sys.executable, "-m", "mlirgpu", "list-outputs", source, "-o", "k.o", "--target", "toy",
                             "--dump-intermediates", "D"], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert listed.returncode == 0, listed.stderr
    assert "D/vecadd_neutral.toy" in listed.stdout.split()
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--target", "toy",
                          "--dump-intermediates", "D"], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(tmp_path / "D")) == sorted(os.path.basename(p) for p in listed.stdout.split()[1:])
    record = json.loads((tmp_path / "D" / "mlirgpu.json").read_text())
    assert [job["target"] for job in record["jobs"]] == ["toy"] and record["jobs"][0]["chip"] == "sm_80"
    assert (tmp_path / "D" / "vecadd_neutral.toy").read_bytes()[:4] == b"\x7fELF"

    project = tmp_path / "p"
    project.mkdir()
    (project / "k.mlir").write_text(open(source).read())
    (project / "SConstruct").write_text(f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
                                        "env.GpuObject('k', 'k.mlir')\n")
    build = subprocess.run([SCONS, "-Q", "GPU_TARGET=toy", "DUMP=1"], cwd=project, capture_output=True, text=True,
                           env=ENV)
    assert build.returncode == 0, build.stderr
    assert (project / "k.dumps" / "vecadd_neutral.toy").exists()
    assert "up to date" in subprocess.run([SCONS, "-Q", "GPU_TARGET=toy", "DUMP=1"], cwd=project,
                                          capture_output=True, text=True, env=ENV).stdout
    help_text = subprocess.run([SCONS, "-h"], cwd=project, capture_output=True, text=True, env=ENV).stdout
    assert re.search(r"^GPU_TARGET: .*\(\|nvvm\|rocdl\|xevm\|toy\)", help_text, re.M)


def test_a_plugin_that_cannot_load_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", os.path.join(CORPUS, "vecadd.neutral.mlir"),
                          "-o", str(tmp_path / "k.o"), "--target", "nvvm"], capture_output=True, text=True,
                         env=dict(ENV, MLIRGPU_TARGETS="no_such_target_module"))
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert "MLIRGPU_TARGETS names 'no_such_target_module'" in run.stderr
