"""Meson and Ninja: the examples build, are no-ops the second time, rebuild on the source, a linked library
(Ninja: through the depfile alone) and a deleted dump, and make the same object as SCons."""
import os
import shutil
import subprocess
import sys

import pytest

from corpusutil import ROOT
from sconsutil import TOOLPATH, scons

BIN = os.path.dirname(sys.executable)
ENV = dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"])


def run(argv, cwd, env=ENV):
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def copy_examples(tmp_path):
    for name in ("meson", "ninja"):
        shutil.copytree(os.path.join(ROOT, "examples", name), tmp_path / name)
    return tmp_path


def test_meson_project(tmp_path):
    work = copy_examples(tmp_path) / "meson"
    run(["meson", "setup", "build"], work)
    build = work / "build"
    first = run(["meson", "compile", "-C", "build"], work)
    assert "Generating saxpy_gpu" in first and "Generating blend_gpu" in first  # two kernels, one recipe
    assert "OK" in run([str(build / "saxpy")], work)
    assert "ninja: no work to do." in run(["meson", "compile", "-C", "build"], work)
    depfile = (build / "saxpy_gpu.d").read_text() if (build / "saxpy_gpu.d").exists() else ""
    deps = run(["ninja", "-C", "build", "-t", "deps", "saxpy_gpu.o"], work)
    assert "scale.bc" in deps and "ockl.bc" not in depfile  # ninja has absorbed the depfile
    (work / "scale.ll").write_text((work / "scale.ll").read_text() + "; touched\n")
    assert "Generating saxpy_gpu" in run(["meson", "compile", "-C", "build"], work)
    os.utime(work / "saxpy.mlir")
    assert "Generating saxpy_gpu" in run(["meson", "compile", "-C", "build"], work)
    (build / "saxpy_gpu.saxpy_module.isa").unlink()
    assert "Generating saxpy_gpu" in run(["meson", "compile", "-C", "build"], work)
    assert (build / "saxpy_gpu.saxpy_module.isa").exists()
    assert "OK" in run(["meson", "test", "-C", "build"], work)

    # SCons, same source and options: the same object, byte for byte.
    project = tmp_path / "scons"
    project.mkdir()
    shutil.copy(work / "saxpy.mlir", project / "saxpy.mlir")
    shutil.copy(build / "scale.bc", project / "scale.bc")
    (project / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "env.GpuObject('saxpy_gpu', 'saxpy.mlir', GPU_TARGET='rocdl', GPU_CHIP='gfx942', GPU_FORMAT='fatbin', "
        "GPU_LINKLIBS=['scale.bc'])\n")
    scons(project)
    assert (project / "saxpy_gpu.o").read_bytes() == (build / "saxpy_gpu.o").read_bytes()


def test_plain_ninja_with_depfile(tmp_path):
    work = copy_examples(tmp_path) / "ninja"
    run(["ninja"], work)
    assert "OK" in run([str(work / "saxpy")], work)
    assert "ninja: no work to do." in run(["ninja"], work)
    os.utime(work / "scale.bc")  # an order-only input: only the depfile makes this a rebuild
    assert "mlirgpu ../meson/saxpy.mlir" in run(["ninja"], work)
    (work / "saxpy_gpu.dumps" / "saxpy_module.hsaco").unlink()
    assert "mlirgpu ../meson/saxpy.mlir" in run(["ninja"], work)
    # Another chip changes the generated header: the C file including it is compiled again (gcc's depfile).
    (work / "build.ninja").write_text((work / "build.ninja").read_text().replace("chip = gfx942", "chip = gfx90a"))
    rebuilt = run(["ninja"], work)
    assert "mlirgpu ../meson/saxpy.mlir" in rebuilt and "cc main.c" in rebuilt
    assert "gfx90a" in run([str(work / "saxpy")], work)
    (work / "build.ninja").write_text((work / "build.ninja").read_text().replace("chip = gfx90a", "chip = gfx942"))
    run(["ninja"], work)
    # The outputs build.ninja declares are exactly what `mlirgpu list-outputs` says for its options.
    listed = run(["mlirgpu", "list-outputs", "../meson/saxpy.mlir", "-o", "saxpy_gpu.o", "--header", "saxpy_gpu.h",
                  "--dump-intermediates", "saxpy_gpu.dumps", "--target", "rocdl", "--chip", "gfx942", "--format",
                  "fatbin"], work).split()
    targets = run(["ninja", "-t", "targets", "all"], work).splitlines()
    outputs = [line.rsplit(": ", 1)[0] for line in targets if line.endswith(": mlirgpu")]
    assert sorted(outputs) == sorted(listed)


@pytest.mark.parametrize("backend", ["auto", "tools"])
def test_depfile_lists_source_libraries_and_tools(tmp_path, backend):
    """With `tools`, the ISA comes from the release llc: the cached compile, which runs none, names it too (a
    second checkout's compile from the team's cache wrote a depfile without it, unlike the first's)."""
    source = tmp_path / "k.mlir"
    shutil.copy(os.path.join(ROOT, "tests", "corpus", "math_libdevice.nvvm.mlir"), source)
    source.write_text(source.read_text().replace("@CHIP@", "sm_80").replace("@O@", "3"))
    env = dict(ENV, MLIRGPU_LLVM_BACKEND=backend)
    run(["mlirgpu", "compile", str(source), "-o", "k.o", "--format", "bin", "--depfile", "k.d"], tmp_path, env)
    text = (tmp_path / "k.d").read_text()
    first, rest = text.split(":", 1)
    assert first == "k.o"
    deps = rest.replace("\\\n", " ").split()
    assert deps[0] == str(source)
    assert any(d.endswith("libdevice.10.bc") for d in deps)
    assert any(d.endswith("/ptxas") for d in deps) and any("mlir-translate" in d for d in deps)
    assert all(os.path.exists(d) for d in deps)
    assert backend != "tools" or any(os.path.basename(d).startswith("llc") for d in deps)
    # Served by the stage cache, the compile runs no tool and links nothing, yet names the same files: Ninja
    # keeps the last depfile, and must still rebuild when ptxas, llc or libdevice change.
    (tmp_path / "k.d").unlink()
    run(["mlirgpu", "compile", str(source), "-o", "k.o", "--format", "bin", "--depfile", "k.d"], tmp_path, env)
    assert (tmp_path / "k.d").read_text() == text


def test_a_compile_error_names_the_recipes_meson_option(tmp_path):
    """The recipe runs its compiles with `--caller meson`: a fix that names the target says the recipe's
    `-Dgpu_target=...`, not the CLI's `--target`."""
    work = copy_examples(tmp_path) / "meson"
    shutil.copy(os.path.join(ROOT, "tests", "corpus", "refusals", "device_nvgpu_mbarrier.mlir"), work / "blend.mlir")
    run(["meson", "setup", "build", "-Dgpu_target=rocdl"], work)
    failed = subprocess.run(["meson", "compile", "-C", "build", "blend_gpu"], cwd=work, capture_output=True,
                            text=True, env=ENV)
    assert failed.returncode != 0
    assert "(fix: the nvgpu dialect is for nvvm only: set -Dgpu_target=nvvm)" in failed.stdout + failed.stderr
