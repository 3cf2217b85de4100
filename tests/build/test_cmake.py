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

from corpusutil import ROOT
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


@pytest.mark.parametrize("generator", GENERATORS)
def test_dumps_turned_off_are_removed_and_clean_removes_every_dump_folder(generator, tmp_path):
    """MLIRGPU_DUMP ON, then OFF: the next compile of each object and library removes the dump folder the
    earlier one wrote (it would look current after a later edit), and `clean` removes dump folders also when the
    configure that wrote them is not the last one."""
    source = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "examples", "library"), source)
    folder = tmp_path / "build"
    dump_folders = [folder / "mathlib" / "mathlib.dumps", folder / "gpu_kernels" / "activations.dumps",
                    folder / "gpu_kernels" / "normalize.dumps"]
    configure(source, folder, generator, "-DGPU_TARGET=nvvm", "-DMLIRGPU_DUMP=ON")
    build(folder)
    assert all((dumps / "mlirgpu.json").is_file() for dumps in dump_folders)
    configure(source, folder, generator, "-DMLIRGPU_DUMP=OFF")
    build(folder, "--target", "clean")
    assert not any(dumps.exists() for dumps in dump_folders)

    configure(source, folder, generator, "-DMLIRGPU_DUMP=ON")
    build(folder)
    configure(source, folder, generator, "-DMLIRGPU_DUMP=OFF")
    rebuilt = commands_run(build(folder))
    assert {"MLIRGPU mathlib: mathlib.mlir", "MLIRGPU gpu_kernels: activations.mlir"} <= set(rebuilt)
    assert not any(dumps.exists() for dumps in dump_folders)
    assert commands_run(build(folder)) == []


NEUTRAL_PROJECT = """\
cmake_minimum_required(VERSION 3.5)
project(p C)
find_package(MLIRGPU CONFIG REQUIRED)
mlirgpu_add_object(k SOURCES {source})
"""


@pytest.mark.parametrize("generator", GENERATORS)
def test_fixes_are_said_in_cmake_terms_at_configure_and_build_time(generator, tmp_path):
    """Target-neutral sources and no GPU_TARGET: the configure fails naming the source, its line, and the cache
    variable a CMake user sets. A compile error at build time names its fix in the same terms, never as the
    CLI's `--target`."""
    source = tmp_path / "src"
    shutil.copytree(EXAMPLE, source)
    (source / "CMakeLists.txt").write_text(NEUTRAL_PROJECT.format(source="scale.mlir"))
    run = subprocess.run(["cmake", "-S", str(source), "-B", str(tmp_path / "b"), "-G", generator,
                          f"-DCMAKE_PREFIX_PATH={cmake_dir()}"], capture_output=True, text=True, env=environment())
    assert run.returncode != 0, run.stdout
    assert f"mlirgpu_add_object(k): mlirgpu: {source / 'scale.mlir'}:3: error: gpu.module @scale_module has no " \
           "target (fix: set -DGPU_TARGET=nvvm|rocdl|xevm (and -DGPU_CHIP=...)" in " ".join(run.stderr.split())
    assert "--target" not in run.stderr

    shutil.copy(os.path.join(ROOT, "tests", "corpus", "refusals", "device_nvgpu_mbarrier.mlir"), source)
    (source / "CMakeLists.txt").write_text(NEUTRAL_PROJECT.format(source="device_nvgpu_mbarrier.mlir"))
    configure(source, tmp_path / "b", generator, "-DGPU_TARGET=rocdl")
    failed = subprocess.run(["cmake", "--build", str(tmp_path / "b"), "--target", "k_compile"], capture_output=True,
                            text=True, env=environment())
    assert failed.returncode != 0
    assert "(fix: the nvgpu dialect is for nvvm only: set -DGPU_TARGET=nvvm)" in failed.stdout + failed.stderr


def test_each_cmake_and_meson_spelling_of_an_option_is_one_the_package_and_recipes_read():
    """The spellings fixes use (compile_options.OPTIONS) name cache variables and keywords MLIRGPUConfig.cmake
    reads, and options the Meson recipes define: a fix never names a setting that does not exist."""
    from mlirgpu.compile_options import OPTIONS

    package = open(os.path.join(cmake_dir(), "MLIRGPUConfig.cmake"), encoding="utf-8").read()
    keywords = {word for lists in re.findall(r'cmake_parse_arguments\(PARSE_ARGV 1 ARG ((?:"[^"]*" ?)+)\)', package)
                for word in re.findall(r"[A-Z_]+", lists)}
    meson_options = "".join(open(os.path.join(ROOT, "examples", name, "meson_options.txt"), encoding="utf-8").read()
                            for name in ("meson", "library"))
    spelled = [option for option in OPTIONS if option.cmake]
    assert {option.name for option in spelled} >= {"target", "chip", "lowering", "dump_dir", "link_libs"}
    for option in spelled:
        word = option.cmake.split("=")[0].split()[0]
        if word.startswith("-D"):
            assert re.search(rf"(?:set|option)\({word[2:]} ", package), option.cmake
        else:
            assert word in keywords, option.cmake
    for option in OPTIONS:
        if option.meson:
            assert f"option('{option.meson.split('=')[0][2:]}'" in meson_options, option.meson
