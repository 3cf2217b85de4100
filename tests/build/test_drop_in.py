"""The tool in a project shaped like a real one: a top SConstruct, SConscripts in subfolders that each make their
own Environment (from `import mlirgpu`, as after `pip install`), one .mlir in a static and a shared library, and a
program that links the shared library and reads the embedded binary through the generated header at run time.
It builds for both targets with and without dumps, null-builds, cleans, and the command line wins over the build
files; warnings are printed as compilers print them, on every path."""
import os
import re
import shutil
import subprocess

import pytest

from corpusutil import ROOT, instantiate
from sconsutil import SCONS, compiled, files, scons

EXAMPLE = os.path.join(ROOT, "examples", "shared")
SCONSTRUCT = """\
SConscript("gpu/SConscript", variant_dir="build/gpu", duplicate=0)
SConscript("app/SConscript", variant_dir="build/app", duplicate=0)
"""
GPU = """\
import mlirgpu
env = Environment(tools=["default", "mlirgpu"], toolpath=[mlirgpu.TOOLPATH], GPU_TARGET="nvvm", CPPPATH=["."],
                  CCFLAGS=["-O2", "-Wall"])
env.SetDefault(GPU_CHIP={"nvvm": "sm_80", "rocdl": "gfx942", "xevm": "pvc"}[env.GpuSetting("GPU_TARGET")])
env.StaticLibrary("gpukernels", ["kernels.mlir", "info.c"])
env.SharedLibrary("gpukernels", ["kernels.mlir", "info.c"])
"""
APP = """\
env = Environment(CPPPATH=["#build/gpu"], LIBS=["gpukernels"], LIBPATH=["#build/gpu"],
                  RPATH=[Dir("#build/gpu").abspath])
program = env.Program("show_kernels", "main.c")
env.Command("show_kernels.check", program, "${SOURCE.abspath} > $TARGET")
"""


def project(path):
    (path / "gpu").mkdir(parents=True)
    (path / "app").mkdir()
    (path / "SConstruct").write_text(SCONSTRUCT)
    (path / "gpu" / "SConscript").write_text(GPU)
    (path / "app" / "SConscript").write_text(APP)
    for name in ("kernels.mlir", "info.c"):
        shutil.copy(os.path.join(EXAMPLE, name), path / "gpu" / name)
    shutil.copy(os.path.join(EXAMPLE, "main.c"), path / "app" / "main.c")
    return path


def products(path):
    return [name for name in files(path) if name.startswith("build/")]


@pytest.mark.parametrize("target", ["rocdl", "nvvm", "xevm"])
def test_real_project_builds_runs_null_builds_and_cleans(tmp_path, target):
    path = project(tmp_path / "p")
    first = scons(path, f"GPU_TARGET={target}", "DUMP=1")
    assert compiled(first) == ["gpu/kernels.mlir", "gpu/kernels.mlir"]  # the static and the shared object
    check = (path / "build" / "app" / "show_kernels.check").read_text()
    assert f"{target} blend binary" in check and "OK" in check
    built = products(path)
    for name in ("kernels.o", "kernels.os", "kernels.h", "kernels.shared.h", "kernels.dumps/mlirgpu.json",
                 "kernels.shared.dumps/mlirgpu.json", "libgpukernels.a", "libgpukernels.so"):
        assert f"build/gpu/{name}" in built
    assert "`.' is up to date." in scons(path, f"GPU_TARGET={target}", "DUMP=1").stdout
    assert "`.' is up to date." in scons(path, f"GPU_TARGET={target}").stdout  # dumps off: nothing to redo
    scons(path, f"GPU_TARGET={target}", "-c")  # cleaning without DUMP removes the dumps too
    assert products(path) == []
    scons(path, f"GPU_TARGET={target}")
    assert not [name for name in products(path) if ".dumps" in name]
    assert "OK" in (path / "build" / "app" / "show_kernels.check").read_text()


def test_command_line_wins_and_setdefault_after_the_tool_works(tmp_path):
    """GPU_TARGET='nvvm' is an Environment keyword and GPU_CHIP a SetDefault after loading the tool: the command
    line beats both, the same for every variable."""
    path = project(tmp_path / "p")
    run = scons(path, "GPU_TARGET=rocdl")
    assert re.search(r"--target rocdl --chip gfx942", run.stdout)
    assert '"rocdl"' in (path / "build" / "gpu" / "kernels.h").read_text()
    run = scons(path, "GPU_TARGET=rocdl", "GPU_CHIP=gfx90a")
    assert "--chip gfx90a" in run.stdout
    run = scons(path)  # no command line: the keyword, and the SetDefault made for it
    assert "--target nvvm --chip sm_80" in run.stdout


def test_a_setting_changed_after_the_object_is_declared_is_the_one_it_compiles_with(tmp_path):
    """SCons builds an object with its environment as the build files leave it: a GPU_* variable or the tool
    search path set after `StaticLibrary(...)` counts (options computed while the files are read are reused only
    where nothing changed)."""
    path = project(tmp_path / "p")
    gpu = path / "gpu" / "SConscript"
    gpu.write_text(GPU + 'env["GPU_CHIP"] = "sm_90"\nenv["GPU_FEATURES"] = "+ptx81"\n')
    run = scons(path)
    assert run.stdout.count("--chip sm_90 --features +ptx81") == 2, run.stdout
    assert "sm_90" in (path / "build" / "gpu" / "kernels.h").read_text()
    assert "`.' is up to date." in scons(path).stdout
    gpu.write_text(GPU)
    assert "--chip sm_80" in scons(path).stdout


def test_a_dump_shaping_setting_changed_after_the_object_is_declared_stops_before_compiling(tmp_path):
    """With dumps the emitter declared the object's dumps from the values when it was declared, and SCons takes no
    new targets once it builds: a later GPU_FORMAT=isa (no cubin, fatbin or log) stops the compile with the
    variable, both values, the build file and the fix; nothing is written, and the next build tries again. A
    later change that leaves the declared dumps as they are (the chip of a one-chip build) builds."""
    path = project(tmp_path / "p")
    gpu = path / "gpu" / "SConscript"
    gpu.write_text(GPU + 'env["GPU_FORMAT"] = "isa"\n')
    for _ in range(2):
        run = scons(path, "DUMP=1", check=False)
        assert run.returncode != 0
        assert re.search(r"gpu/SConscript: error: GPU_FORMAT was changed from 'fatbin' to 'isa' after "
                         r"build/gpu/kernels\.os? was declared with dumps", run.stderr), run.stderr
        assert re.search(r"fix: set GPU_FORMAT before the call that declares kernels\.os?, or pass it to that call "
                         r"\(GPU_FORMAT='isa'\)", run.stderr), run.stderr
        assert not [name for name in products(path) if name.endswith((".o", ".os", ".h", ".isa", ".json"))]
    gpu.write_text(GPU + 'env["GPU_CHIP"] = "sm_90"\n')
    run = scons(path, "DUMP=1")
    assert run.stdout.count("--chip sm_90") == 2
    assert (path / "build" / "gpu" / "kernels.dumps" / "blend.isa").is_file()


def test_dumpdir_on_the_command_line_gives_each_object_a_folder(tmp_path):
    path = project(tmp_path / "p")
    scons(path, "GPU_TARGET=rocdl", "DUMP=1", "GPU_DUMPDIR=dumps")
    made = [name for name in files(path) if name.startswith("dumps/")]
    assert "dumps/build/gpu/kernels/mlirgpu.json" in made and "dumps/build/gpu/kernels.shared/mlirgpu.json" in made
    assert "up to date" in scons(path, "GPU_TARGET=rocdl", "DUMP=1", "GPU_DUMPDIR=dumps").stdout


def test_a_path_on_the_command_line_is_from_the_top_folder(tmp_path):
    """`scons GPU_LINKLIBS=libs/extra.ll` names top/libs/extra.ll, though the objects are declared in
    gpu/SConscript under VariantDir (it was looked for in gpu/libs/); the record names what each job linked."""
    import json

    path = project(tmp_path / "p")
    (path / "libs").mkdir()
    (path / "libs" / "extra.ll").write_text('target triple = "amdgcn-amd-amdhsa"\n'
                                            "define float @extra(float %x) {\n  ret float %x\n}\n")
    run = scons(path, "GPU_TARGET=rocdl", "DUMP=1", "GPU_LINKLIBS=libs/extra.ll")
    assert run.stdout.count("-l libs/extra.ll") == 2, run.stdout
    record = json.loads((path / "build" / "gpu" / "kernels.dumps" / "mlirgpu.json").read_text())
    assert [item["path"] for item in record["jobs"][0]["libraries"]] == ["libs/extra.ll"]
    assert "up to date" in scons(path, "GPU_TARGET=rocdl", "DUMP=1", "GPU_LINKLIBS=libs/extra.ll").stdout


def test_changing_the_chip_removes_the_dumps_of_the_old_one(tmp_path):
    path = project(tmp_path / "p")
    scons(path, "GPU_TARGET=rocdl", "DUMP=1", "GPU_CHIP=gfx90a,gfx942")
    assert "build/gpu/kernels.dumps/blend.gfx90a.isa" in files(path)
    scons(path, "GPU_TARGET=rocdl", "DUMP=1", "GPU_CHIP=gfx942")
    dumps = [name for name in files(path) if name.startswith("build/gpu/kernels.dumps/")]
    assert "build/gpu/kernels.dumps/blend.isa" in dumps and not [name for name in dumps if "gfx90a" in name]


def test_unknown_variable_is_named(tmp_path):
    path = project(tmp_path / "p")
    run = scons(path, "GPU_TRAGET=rocdl")
    assert "unknown variable GPU_TRAGET; did you mean GPU_TARGET?" in run.stderr


def test_help_lists_every_variable(tmp_path):
    path = project(tmp_path / "p")
    text = subprocess.run([SCONS, "-h", "GPU_TARGET=rocdl"], cwd=path, capture_output=True, text=True).stdout
    from mlirgpu.compile_options import OPTIONS

    for option in OPTIONS:
        if option.variable:
            assert re.search(rf"^{option.variable}: ", text, re.M), option.variable
    assert re.search(r"^GPU_TARGET: .*\n\s+default: \n\s+actual: rocdl", text, re.M)
    assert re.search(r"^GPU_FORMAT: .*\(isa\|bin\|fatbin\)\n\s+default: fatbin", text, re.M)


WARNING_SOURCES = {
    # warning -> (source, SCons settings, the text of the warning)
    "no kernels": ('module attributes {gpu.container_module} {\n  gpu.module @empty [#nvvm.target<chip = "sm_80">] {\n'
                   '    llvm.func @helper() { llvm.return }\n  }\n}\n', {}, "has no kernels", 2),
    "own target": ('module attributes {gpu.container_module} {\n  gpu.module @own [#rocdl.target<chip = "gfx942">] {\n'
                   '    llvm.func @k() attributes {gpu.kernel, rocdl.kernel} { llvm.return }\n  }\n}\n',
                   {"GPU_TARGET": "nvvm"}, "carries its own target(s); target nvvm applies only to modules without", 2),
    "vendor section": ('module attributes {gpu.container_module} {\n  gpu.module @vendor [#nvvm.target<chip = "sm_80">] {\n'
                       '    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} { llvm.return }\n  }\n}\n',
                       {"GPU_LAYOUT": "vendor", "GPU_SECTION": "my_binaries"}, "overrides the vendor sections", None),
}
# Another top-level op: the compile then reads the file through mlir-opt instead of cutting it directly.
OTHER_OP = 'module attributes {gpu.container_module} {\n  func.func private @unused()\n'


@pytest.mark.parametrize("path_kind", ["direct", "mlir-opt"])
def test_every_warning_is_printed_on_every_path(tmp_path, path_kind):
    lines = ["env = Environment(tools=['default', 'mlirgpu'], toolpath=[__import__('mlirgpu').TOOLPATH])"]
    for index, (name, (text, settings, _message, _line)) in enumerate(WARNING_SOURCES.items()):
        if path_kind == "mlir-opt":
            text = text.replace("module attributes {gpu.container_module} {\n", OTHER_OP, 1)
        (tmp_path / f"w{index}.mlir").write_text(text)
        lines.append(f"env.GpuObject('w{index}', 'w{index}.mlir', **{settings!r})")
    (tmp_path / "SConstruct").write_text("\n".join(lines) + "\n")
    run = subprocess.run([SCONS, "-Q"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if ": warning: " in line]
    assert len(warnings) == len(WARNING_SOURCES), run.stderr
    for index, (_name, (_text, _settings, message, line)) in enumerate(WARNING_SOURCES.items()):
        where = f"w{index}.mlir:{line + (1 if path_kind == 'mlir-opt' else 0)}: warning: " if line else \
            f"w{index}.mlir: warning: "
        assert any(w.startswith(where) and message in w for w in warnings), (where, warnings)
    subprocess.run([SCONS, "-Q", "-c"], cwd=tmp_path, capture_output=True, check=True)
    quiet = subprocess.run([SCONS, "-Q", "GPU_WARNINGS=none"], cwd=tmp_path, capture_output=True, text=True)
    assert quiet.returncode == 0 and ": warning: " not in quiet.stderr
    subprocess.run([SCONS, "-Q", "-c"], cwd=tmp_path, capture_output=True, check=True)
    strict = subprocess.run([SCONS, "-Q", "-k", "GPU_WARNINGS=error"], cwd=tmp_path, capture_output=True, text=True)
    assert strict.returncode != 0 and strict.stderr.count("GPU_WARNINGS=error") == len(WARNING_SOURCES)


def test_default_nvvm_chip_is_the_oldest_ptxas_accepts(tmp_path):
    instantiate(os.path.join(ROOT, "tests", "corpus", "vecadd.neutral.mlir"), tmp_path / "k.mlir")
    (tmp_path / "SConstruct").write_text(
        "env = Environment(tools=['default', 'mlirgpu'], toolpath=[__import__('mlirgpu').TOOLPATH])\n"
        "env.GpuObject('k', 'k.mlir')\n")
    from mlirgpu.targets.cuda import cuda_toolkit, ptxas_chips

    oldest = ptxas_chips(os.path.join(cuda_toolkit(), "bin", "ptxas"))[0]
    run = scons(tmp_path, "GPU_TARGET=nvvm", "GPU_FORMAT=bin")
    assert f"--chip {oldest}" in run.stdout
