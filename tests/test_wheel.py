"""A pip user gets the whole tool: the wheel built by a standard build front end installs into a fresh venv (no
bootstrap, nothing of this checkout on the path), without the optional parts (Redis client, Dask), and builds an
SCons project (`toolpath=[mlirgpu.TOOLPATH]`) and a CMake project (`--cmake-dir`) from it, outside the repo."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "cmake")
SCONSTRUCT = """\
import mlirgpu
env = Environment(tools=["default", "mlirgpu"], toolpath=[mlirgpu.TOOLPATH])
gpu = env.GpuObject("kernels", "scale.mlir")
env.Program("app", ["main.c", gpu[0]], CPPPATH=["."])
"""
MAIN = """\
#include <stdio.h>
#include "kernels.h"
int main(void) { printf("%llu\\n", (unsigned long long)scale_module_binary_size); return scale_module_binary_size < 64; }
"""


def clean_environment(venv):
    """The environment of a user whose venv is active: its bin first, none of this checkout's paths."""
    keep = [p for p in os.environ["PATH"].split(os.pathsep) if not p.startswith(ROOT)]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(venv / "bin")] + keep)
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the wheel of this checkout installed by pip (built by `python -m build`)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"  # a copy: building never writes into the checkout
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "build", "__pycache__", "*.dumps"))
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(work / "dist"), str(source)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = glob.glob(str(work / "dist" / "*.whl"))
    assert len(wheel) == 1, wheel
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", wheel[0]], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv


def test_the_core_install_has_no_optional_parts(installed):
    listed = subprocess.run([str(installed / "bin" / "pip"), "list", "--format=freeze"], capture_output=True,
                            text=True, check=True).stdout.lower()
    names = {line.split("==")[0] for line in listed.splitlines()}
    assert {"scons", "llvmlite", "scons-mlir-gpu"} <= names, names
    assert not names & {"redis", "distributed", "dask", "tornado"}, names


def test_a_pip_user_builds_an_scons_project(installed, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(os.path.join(EXAMPLE, "scale.mlir"), project)
    (project / "SConstruct").write_text(SCONSTRUCT)
    (project / "main.c").write_text(MAIN)
    env = clean_environment(installed)
    run = subprocess.run([str(installed / "bin" / "scons"), "-Q", "GPU_TARGET=rocdl", "DUMP=1"], cwd=project,
                         capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (project / "kernels.dumps" / "scale_module.isa").exists()
    assert subprocess.run([str(project / "app")], capture_output=True).returncode == 0
    again = subprocess.run([str(installed / "bin" / "scons"), "-Q", "GPU_TARGET=rocdl", "DUMP=1"], cwd=project,
                           capture_output=True, text=True, env=env)
    assert "up to date" in again.stdout, again.stdout + again.stderr


@pytest.mark.needs("cmake", "./dev test installs it (Debian packages cmake and ninja-build)")
def test_a_pip_user_builds_a_cmake_project(installed, tmp_path):
    env = clean_environment(installed)
    found = subprocess.run([str(installed / "bin" / "mlirgpu"), "--cmake-dir"], capture_output=True, text=True,
                           env=env, check=True).stdout.strip()
    assert found.startswith(str(installed)) and os.path.isfile(os.path.join(found, "MLIRGPUConfig.cmake"))
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    build = tmp_path / "build"
    configure = subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
                                f"-DCMAKE_PREFIX_PATH={found}", "-DGPU_TARGET=rocdl", "-DMLIRGPU_DUMP=ON"],
                               capture_output=True, text=True, env=env)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, env=env)
    assert built.returncode == 0, built.stdout + built.stderr
    test = subprocess.run(["ctest", "--test-dir", str(build)], capture_output=True, text=True, env=env)
    assert test.returncode == 0 and "100% tests passed" in test.stdout, test.stdout
