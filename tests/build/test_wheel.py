"""A pip user gets the whole tool: the wheel built by a standard build front end installs into a fresh venv (no
bootstrap, nothing of this checkout on the path), without the optional parts (Redis client, Dask), and builds an
SCons project (`toolpath=[mlirgpu.TOOLPATH]`) and a CMake project (`--cmake-dir`) from it, outside the repo."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

from corpusutil import ROOT

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


def _served_commands(mlirgpu, env):
    status = subprocess.run([mlirgpu, "server", "status"], env=env, capture_output=True, text=True, timeout=60).stdout
    return int(status.split("served ")[1].split()[0])


@pytest.fixture
def user(installed, tmp_path):
    """A pip user's environment with a user cache and a compile server folder of its own (the server stopped
    after the test), and a folder on PYTHONPATH whose sitecustomize leaves a mark whenever a Python starts."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(f"open({str(tmp_path / 'python-started')!r}, 'a').close()\n")
    server = tmp_path / "server"
    server.mkdir(mode=0o700)
    env = dict(clean_environment(installed), XDG_CACHE_HOME=str(tmp_path / "user-cache"), MLIRGPU_SERVER="on",
               MLIRGPU_SERVER_DIR=str(server), MLIRGPU_CACHE="off", PYTHONPATH=str(probe))
    yield env
    subprocess.run([str(installed / "bin" / "mlirgpu"), "server", "stop"], env=env, capture_output=True, timeout=60)


def test_a_pip_users_first_server_builds_the_launcher_and_recipes_run_it(installed, user, tmp_path):
    """No bootstrap: the first compile server builds the native launcher into the user's cache; `mlirgpu
    --launcher` names that file, and a compile run through it is served without starting Python (the probe's
    sitecustomize marks every Python start), with the object the Python script's compile makes."""
    script = str(installed / "bin" / "mlirgpu")
    started = subprocess.run([script, "server", "start"], env=user, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    built = glob.glob(str(tmp_path / "user-cache" / "scons-mlir-gpu" / "launcher" / "mlirgpu-*"))
    for _ in range(600):
        if built and os.access(built[0], os.X_OK):
            break
        subprocess.run(["sleep", "0.1"])
        built = glob.glob(str(tmp_path / "user-cache" / "scons-mlir-gpu" / "launcher" / "mlirgpu-*"))
    assert built, "the server built no launcher"
    found = subprocess.run([script, "--launcher"], env=user, capture_output=True, text=True, timeout=60)
    assert found.returncode == 0 and found.stdout.strip() == built[0] and not found.stderr, found.stderr
    with open(built[0], "rb") as handle:
        assert handle.read(4) == b"\x7fELF"
    source = os.path.join(EXAMPLE, "scale.mlir")
    compile_ = ["compile", source, "--target", "rocdl", "--dump-intermediates", "d"]
    before = _served_commands(script, user)
    os.unlink(tmp_path / "python-started")
    run = subprocess.run([built[0], *compile_, "-o", "native.o"], cwd=tmp_path, env=user, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "python-started").exists(), "the launcher started Python"
    assert _served_commands(script, user) == before + 1
    subprocess.run([script, *compile_, "-o", "python.o"], cwd=tmp_path, env=dict(user, MLIRGPU_SERVER="off"),
                   check=True, timeout=120)
    assert (tmp_path / "python-started").exists()  # the probe does see a Python start
    assert (tmp_path / "native.o").read_bytes() == (tmp_path / "python.o").read_bytes()


def test_without_a_c_compiler_the_launcher_is_the_python_script(installed, user):
    found = subprocess.run([str(installed / "bin" / "mlirgpu"), "--launcher"], env=dict(user, CC="/nonexistent/cc"),
                           capture_output=True, text=True, timeout=60)
    assert found.returncode == 0 and found.stdout.strip() == str(installed / "bin" / "mlirgpu"), found.stderr
    assert found.stderr.startswith("mlirgpu: warning: no native launcher: ") and "(fix: " in found.stderr


def test_install_launcher_puts_it_over_pips_script(installed, user, tmp_path):
    """`mlirgpu --install-launcher`: the venv's `mlirgpu` becomes the native launcher (as tools/bootstrap makes
    it), and it still runs every command (`--version` goes to the Python client). Last in this file: it changes
    the shared venv's command, which still behaves as the script did."""
    script = installed / "bin" / "mlirgpu"
    assert script.read_bytes()[:2] == b"#!"
    run = subprocess.run([str(script), "--install-launcher"], env=user, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert script.read_bytes()[:4] == b"\x7fELF"
    version = subprocess.run([str(script), "--version"], env=user, capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("mlirgpu "), version.stderr
