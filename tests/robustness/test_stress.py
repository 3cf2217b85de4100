"""Stress: repeated clean `-j2` builds of the repository's examples give byte-identical outputs every time.

CI runs MLIRGPU_STRESS_BUILDS=3 (the default); the full run is MLIRGPU_STRESS_BUILDS=50.
"""
import os
import shutil

from corpusutil import ROOT
from sconsutil import files, same_tree, scons

BUILDS = int(os.environ.get("MLIRGPU_STRESS_BUILDS", "3"))


def test_repeated_parallel_builds_are_identical(tmp_path):
    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "build", "tests", "*.dblite"))
    reference = None
    for attempt in range(BUILDS):
        shutil.rmtree(work / "build", ignore_errors=True)
        scons(work, "-j2", "GPU_TARGET=nvvm", "DUMP=1")
        outputs = [name for name in files(work / "build")]
        assert len(outputs) > 40
        if reference is None:
            reference = tmp_path / "reference"
            shutil.copytree(work / "build", reference)
            names = outputs
            continue
        assert outputs == names, f"build {attempt}: different files"
        assert same_tree(reference, work / "build", names) == [], f"build {attempt}: different bytes"
