"""The CMake module (site_scons/mlirgpu/cmake, found with `python -m mlirgpu --cmake-dir`) with a real cmake and
both the Ninja and the Unix Makefiles generators, with and without MLIRGPU_DUMP: examples/cmake builds and its
ctest passes; a null build runs no command; editing a .mlir rebuilds its object (and the link), editing a linked
bitcode library rebuilds what links it, switching GPU_TARGET rebuilds every object; clean removes everything
the compiles wrote. The project asks for cmake_minimum_required(3.5): depfiles work under old policies too."""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from mlirgpu.llvm import toolchain

EXAMPLE = os.path.join(ROOT, "examples", "cmake")
GENERATORS = ["Ninja", "Unix Makefiles"]

pytestmark = pytest.mark.needs("cmake", "./dev test installs it (Debian packages cmake and ninja-build)")


def cmake_dir():
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "--cmake-dir"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons")), check=True)
    return run.stdout.strip()


def environment():
    # The `mlirgpu` command of this venv first on PATH, as for a user whose venv is active.
    return dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])


def configure(source, build, generator, *settings):
    run = subprocess.run(["cmake", "-S", str(source), "-B", str(build), "-G", generator,
                          f"-DCMAKE_PREFIX_PATH={cmake_dir()}", *settings], capture_output=True, text=True,
                         env=environment())
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def build(folder, *args):
    run = subprocess.run(["cmake", "--build", str(folder), *args], capture_output=True, text=True, env=environment())
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def commands_run(output):
    """The steps a build's output shows it ran (GPU compiles, C compiles, links)."""
    return re.findall(r"(MLIRGPU \S+: \S+|Building C object \S+|Linking C executable \S+)", output)


def tree(folder):
    return {os.path.relpath(os.path.join(d, n), folder) for d, _s, names in os.walk(folder) for n in names}


@pytest.fixture
def project(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    return source


@pytest.mark.parametrize("dump", ["ON", "OFF"])
@pytest.mark.parametrize("generator", GENERATORS)
def test_build_null_build_edits_target_switch_and_clean(generator, dump, project, tmp_path):
    folder = tmp_path / "build"
    configure(project, folder, generator, f"-DMLIRGPU_DUMP={dump}", "-DGPU_TARGET=rocdl")
    configured = tree(folder)
    first = commands_run(build(folder))
    assert sorted(first) == sorted(["MLIRGPU gpu_kernels: scale.mlir", "MLIRGPU gpu_kernels: shift.mlir",
                                    "Building C object CMakeFiles/app.dir/main.c.o", "Linking C executable app"])
    test = subprocess.run(["ctest", "--test-dir", str(folder), "--output-on-failure"], capture_output=True, text=True)
    assert test.returncode == 0 and "100% tests passed" in test.stdout, test.stdout
    dumps = {name for name in tree(folder / "gpu_kernels") if name.endswith((".isa", ".opt.ll", ".hsaco"))}
    assert dumps == ({"scale.dumps/scale_module.isa", "scale.dumps/scale_module.opt.ll",
                      "scale.dumps/scale_module.hsaco", "shift.dumps/shift_module.isa",
                      "shift.dumps/shift_module.opt.ll", "shift.dumps/shift_module.hsaco"}
                     if dump == "ON" else set())
    assert commands_run(build(folder)) == []  # the null build runs nothing
    if generator == "Ninja":
        program = re.search(r"^CMAKE_MAKE_PROGRAM:\w+=(.*)$", (folder / "CMakeCache.txt").read_text(), re.M).group(1)
        assert "no work to do" in subprocess.run([program, "-C", str(folder), "-n"], capture_output=True,
                                                 text=True).stdout

    time.sleep(1.1)  # a new mtime for Makefiles' second-granularity checks
    shift = project / "shift.mlir"
    shift.write_text(shift.read_text().replace("arith.addf %v, %b", "arith.subf %v, %b"))
    rebuilt = set(commands_run(build(folder)))
    # Ninja keeps the unchanged header's time (restat); CMake's Makefiles touch every output of a command.
    also = {"Building C object CMakeFiles/app.dir/main.c.o"} if generator == "Unix Makefiles" else set()
    assert rebuilt - also == {"Linking C executable app", "MLIRGPU gpu_kernels: shift.mlir"}, rebuilt

    configure(project, folder, generator, "-DGPU_TARGET=nvvm", "-DGPU_CHIP=sm_80")
    switched = commands_run(build(folder))
    assert {"MLIRGPU gpu_kernels: scale.mlir", "MLIRGPU gpu_kernels: shift.mlir"} <= set(switched)
    assert subprocess.run([str(folder / "app")], capture_output=True, text=True).stdout.startswith(
        "cmake example: nvvm")

    build(folder, "--target", "clean")
    left = tree(folder) - configured
    assert not any(name.startswith("gpu_kernels/") and not name.endswith(".options") for name in left), left
    assert not any(name.endswith(".dumps") for name in os.listdir(folder / "gpu_kernels"))
    assert not (folder / "app").exists()


USER_LIBRARY = """\
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"
define float @user_scale(float %x) {
  %r = fmul float %x, FACTOR
  ret float %r
}
"""
KERNEL = """\
module attributes {gpu.container_module} {
  gpu.module @user_module [#nvvm.target<chip = "sm_80">] {
    llvm.func @user_scale(f32) -> f32
    llvm.func @scaled(%x: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %v = llvm.load %x : !llvm.ptr<1> -> f32
      %u = llvm.call @user_scale(%v) : (f32) -> f32
      llvm.store %u, %x : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""
LIBRARY_PROJECT = """\
cmake_minimum_required(VERSION 3.5)
project(linked C)
find_package(MLIRGPU CONFIG REQUIRED)
mlirgpu_add_object(kernels SOURCES user.mlir LINK_LIBS lib/user.bc FORMAT isa)
add_executable(app main.c)
target_link_libraries(app PRIVATE kernels)
"""


@pytest.mark.parametrize("generator", GENERATORS)
def test_editing_a_linked_library_rebuilds_what_links_it(generator, tmp_path):
    source = tmp_path / "src"
    (source / "lib").mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(LIBRARY_PROJECT)
    (source / "user.mlir").write_text(KERNEL)
    (source / "main.c").write_text('#include "user.h"\nint main(void) { return user_module_binary_size < 64; }\n')

    def library(factor):
        (source / "lib" / "user.ll").write_text(USER_LIBRARY.replace("FACTOR", factor))
        subprocess.run([toolchain.llvm_tool("llvm-as"), str(source / "lib" / "user.ll"), "-o",
                        str(source / "lib" / "user.bc")], check=True)

    library("2.500000e-01")
    folder = tmp_path / "build"
    configure(source, folder, generator)
    assert "MLIRGPU kernels: user.mlir" in commands_run(build(folder))
    isa = (folder / "kernels" / "user.o").read_bytes()
    assert commands_run(build(folder)) == []
    time.sleep(1.1)
    library("4.000000e+00")
    also = {"Building C object CMakeFiles/app.dir/main.c.o"} if generator == "Unix Makefiles" else set()
    assert set(commands_run(build(folder))) - also == {"Linking C executable app", "MLIRGPU kernels: user.mlir"}
    assert (folder / "kernels" / "user.o").read_bytes() != isa


def test_a_missing_source_is_one_configure_error_naming_it(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.5)\nproject(p C)\nfind_package(MLIRGPU CONFIG REQUIRED)\n"
        "mlirgpu_add_object(k SOURCES nothere.mlir)\n")
    run = subprocess.run(["cmake", "-S", str(source), "-B", str(tmp_path / "b"), "-G", "Ninja",
                          f"-DCMAKE_PREFIX_PATH={cmake_dir()}", "-DGPU_TARGET=nvvm"], capture_output=True, text=True,
                         env=environment())
    assert run.returncode != 0 and "nothere.mlir" in run.stderr and "mlirgpu_add_object(k)" in run.stderr
