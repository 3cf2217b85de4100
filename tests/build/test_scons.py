"""The SCons tool in real builds: null builds, rebuilds, clean, CacheDir, VariantDir, -j, failures."""
import os
import shutil
import subprocess
import sys

import pytest

from corpusutil import ROOT
from sconsutil import SCONS, TOOLPATH, compiled, files, make_project, same_tree, scons, write_library

DUMP_SUFFIXES = ("initial.ll", "linked.ll", "opt.ll", "isa")


def dump_files(project):
    return [f for f in files(project) if ".dumps/" in f]


def test_dumps_are_targets_null_build_and_single_rebuild(tmp_path):
    project = make_project(tmp_path / "p")
    first = scons(project, "DUMP=1")
    assert compiled(first) == ["a.mlir", "b.mlir", "c.mlir", "d.mlir"]
    dumps = dump_files(project)
    assert "a.dumps/saxpy_nvvm.fatbin" in dumps and "b.dumps/multi_kernel_rocdl.hsaco" in dumps
    assert "c.dumps/vecadd_neutral.isa" in dumps
    for stem in ("a.dumps/saxpy_nvvm", "b.dumps/multi_kernel_rocdl", "c.dumps/vecadd_neutral"):
        for suffix in DUMP_SUFFIXES:
            assert f"{stem}.{suffix}" in dumps
    assert "scons: `.' is up to date." in scons(project, "DUMP=1").stdout

    victims = [f"b.dumps/multi_kernel_rocdl.{s}" for s in DUMP_SUFFIXES + ("hsaco",)] + ["a.dumps/saxpy_nvvm.cubin"]
    for victim in victims:
        before = (project / victim).read_bytes()
        (project / victim).unlink()
        run = scons(project, "DUMP=1")
        assert compiled(run) == [victim.split(".")[0] + ".mlir"]
        assert (project / victim).read_bytes() == before


def test_editing_one_source_rebuilds_only_it(tmp_path):
    project = make_project(tmp_path / "p")
    scons(project, "DUMP=1")
    text = (project / "b.mlir").read_text()
    (project / "b.mlir").write_text(text.replace("O = 2", "O = 3"))
    assert compiled(scons(project, "DUMP=1")) == ["b.mlir"]


@pytest.mark.parametrize("setting,expected", [
    ("GPU_OPT_LEVEL=1", ["c.mlir"]),  # only c has no target of its own
    ("GPU_CHIP=sm_90", ["c.mlir"]),
    ("GPU_SECTION=gpu_binaries", ["a.mlir", "b.mlir", "c.mlir", "d.mlir"]),
    ("GPU_FORMAT=bin", ["a.mlir", "b.mlir", "c.mlir", "d.mlir"]),
])
def test_changing_a_knob_rebuilds_affected_objects(tmp_path, setting, expected):
    project = make_project(tmp_path / "p")
    scons(project, "DUMP=1")
    run = scons(project, "DUMP=1", setting)
    assert compiled(run) == expected
    assert "up to date" in scons(project, "DUMP=1", setting).stdout


def test_changing_a_linked_library_rebuilds_its_object(tmp_path):
    project = make_project(tmp_path / "p")
    scons(project)
    write_library(project, 3)
    assert compiled(scons(project)) == ["d.mlir"]


def test_dump_toggle_and_clean(tmp_path):
    project = make_project(tmp_path / "p")
    scons(project)
    assert dump_files(project) == []
    run = scons(project, "DUMP=1")
    assert compiled(run) == ["a.mlir", "b.mlir", "c.mlir", "d.mlir"]
    assert len(dump_files(project)) > 20
    assert "up to date" in scons(project).stdout  # turning dumps off rebuilds nothing
    scons(project, "DUMP=1", "-c")
    left = [f for f in files(project) if f.endswith((".o", ".ll", ".isa", ".cubin", ".fatbin", ".hsaco"))
            and f != "lib.ll"]
    assert left == [] and not any(name.endswith(".dumps") for name in os.listdir(project))


def test_cachedir_restores_everything_across_checkouts(tmp_path):
    cache = tmp_path / "cache"
    sconstruct = "CacheDir({cache!r})\n".format(cache=str(cache)) + open(
        os.path.join(ROOT, "tests", "sconsutil.py")).read().split('SCONSTRUCT = """\\\n')[1].split('"""')[0]
    one = make_project(tmp_path / "one", sconstruct)
    scons(one, "DUMP=1")
    built = {name: (one / name).read_bytes() for name in files(one)}
    scons(one, "DUMP=1", "-c")
    run = scons(one, "DUMP=1")
    assert compiled(run) == []
    targets = [name for name in built if name.endswith((".o", ".h")) or ".dumps/" in name]
    for name in targets:
        assert f"Retrieved `{name}' from cache" in run.stdout
        assert (one / name).read_bytes() == built[name]
    two = make_project(tmp_path / "elsewhere" / "two", sconstruct)
    run = scons(two, "DUMP=1")
    assert compiled(run) == [] and run.stdout.count("from cache") == len(targets)


def test_variantdir_keeps_dumps_out_of_the_source_tree(tmp_path):
    project = tmp_path / "p"
    make_project(project / "src")
    (project / "src" / "SConstruct").rename(project / "src" / "SConscript")
    sconscript = (project / "src" / "SConscript").read_text()
    env_line, rest = sconscript.split("\n", 1)
    (project / "src" / "SConscript").write_text('Import("env")\n' + rest)
    (project / "SConstruct").write_text(
        env_line + '\nSConscript("src/SConscript", variant_dir="build", duplicate=0, exports="env")\n')
    before = files(project / "src")
    scons(project, "DUMP=1")
    assert files(project / "src") == before
    assert "build/a.dumps/saxpy_nvvm.isa" in files(project)


def test_parallel_builds_are_identical_to_serial(tmp_path):
    serial = make_project(tmp_path / "serial")
    scons(serial, "DUMP=1", "-j1")
    names = files(serial)
    for attempt in range(2):
        parallel = make_project(tmp_path / f"parallel{attempt}")
        scons(parallel, "DUMP=1", "-j2")
        assert files(parallel) == names
        assert same_tree(serial, parallel, names) == []


def test_dumps_off_builds_the_same_objects(tmp_path):
    """With dumps off no stage prints its module (the text is only for the dump); the objects stay the same."""
    dumped = make_project(tmp_path / "dumped")
    scons(dumped, "DUMP=1", "-j2")
    plain = make_project(tmp_path / "plain")
    scons(plain, "DUMP=0", "-j2")
    names = [name for name in files(plain) if name.endswith((".o", ".h"))]
    assert len(names) == 8 and not [name for name in files(plain) if ".dumps" in name]
    assert same_tree(dumped, plain, names) == []


@pytest.mark.parametrize("jobs", ["-j1", "-j2"])  # -j2: workers forked from a zygote
def test_llvm_crash_fails_one_target_and_keep_going(tmp_path, jobs):
    project = make_project(tmp_path / "p")
    text = (project / "a.mlir").read_text().replace('chip = "sm_80"', 'chip = "sm_90", features = "+ptx60"')
    (project / "a.mlir").write_text(text)
    run = scons(project, "-k", jobs, "DUMP=1", check=False)
    assert run.returncode != 0
    assert "a.mlir" in run.stderr and "stage initial.ll" in run.stderr
    assert "LLVM crashed (exit code 1): LLVM ERROR: PTX version 6.0" in run.stderr
    assert (project / "b.o").exists() and (project / "c.o").exists() and not (project / "a.o").exists()
    run = scons(project, "-k", "DUMP=1", check=False)
    assert compiled(run) == ["a.mlir"]  # the failed target is not taken as up to date


def test_root_examples_build_and_run(tmp_path):
    """The README's main job for ROCDL in a copy of the repository's examples."""
    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "build", "tests", "*.dblite"))
    scons(work, "GPU_TARGET=rocdl", "DUMP=1")
    assert "OK" in (work / "build/rocdl/saxpy/saxpy.check").read_text()
    assert "stencil kernel embedded" in (work / "build/rocdl/legacy_app/src/app.check").read_text()
    assert (work / "build/rocdl/multi/kernels.dumps/reduce_sum.gfx90a.hsaco").exists()
    assert (work / "build/rocdl/neutral/softplus.dumps/softplus.isa").exists()
    assert "up to date" in scons(work, "GPU_TARGET=rocdl", "DUMP=1").stdout


def test_tool_from_installed_package(tmp_path):
    """`pip install` the project into a fresh venv; an outside project uses toolpath=[mlirgpu.TOOLPATH]."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-deps", "-q", ROOT],
                         capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    project = make_project(tmp_path / "p")
    text = (project / "SConstruct").read_text().split("\n", 1)[1]
    (project / "SConstruct").write_text(
        "import mlirgpu\nenv = Environment(tools=['default', 'mlirgpu'], toolpath=[mlirgpu.TOOLPATH])\n" + text)
    python = venv / "bin" / "python"
    # SCons and llvmlite from this environment's site-packages; its editable mlirgpu is not seen this way
    # (.pth files are only read in site dirs), so `import mlirgpu` finds the installed copy.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(_site_packages()))
    run = subprocess.run([str(python), "-c", "import mlirgpu, sys; print(mlirgpu.TOOLPATH)"], capture_output=True,
                         text=True, cwd=tmp_path, env=env)
    assert str(venv) in run.stdout, run.stdout + run.stderr
    run = subprocess.run([str(python), SCONS, "-Q", "DUMP=1"], cwd=project, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (project / "a.dumps" / "saxpy_nvvm.isa").exists()


def test_tool_copied_into_a_project(tmp_path):
    """Copying site_scons/ (tool and core) into a project's own site_scons works without any install."""
    project = make_project(tmp_path / "p")
    shutil.copytree(os.path.join(ROOT, "site_scons"), project / "site_scons",
                    ignore=shutil.ignore_patterns("__pycache__"))
    text = (project / "SConstruct").read_text().split("\n", 1)[1]
    (project / "SConstruct").write_text("env = Environment(tools=['default', 'mlirgpu'])\n" + text)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # A Python that has SCons and llvmlite but not our package: the venv's, with the editable install hidden.
    run = subprocess.run([sys.executable, "-S", SCONS, "-Q", "DUMP=1"], cwd=project, capture_output=True,
                         text=True, env=dict(env, PYTHONPATH=os.pathsep.join(_site_packages())))
    assert run.returncode == 0, run.stdout + run.stderr
    assert (project / "b.dumps" / "multi_kernel_rocdl.hsaco").exists()


def _site_packages():
    """This environment's site-packages: SCons and llvmlite, but not the editable mlirgpu (a .pth finder)."""
    import site

    return site.getsitepackages()


@pytest.mark.parametrize("remote", ["", "redis://127.0.0.1:1/0"], ids=["early", "on demand"])
def test_a_builds_sources_are_translated_together(tmp_path, remote):
    """With the stage cache off every compile translates, and takes its translation from one background
    mlir-translate run holding all six sources: fewer than a first early run, so the first compile to ask sends
    it, as it does in a build that names a remote cache (where runs wait for a compile to ask; a cached compile
    asks for none: tests/fleet/test_remote_cache.py)."""
    from corpusutil import CORPUS, instantiate
    from mlirgpu.llvm import toolchain
    from sconsutil import TOOLPATH

    runs = tmp_path / "runs"
    mlir = tmp_path / "mlir-bin"
    mlir.mkdir()
    (mlir / "mlir-translate").write_text(
        f'#!/bin/sh\ncase "$1" in --version) ;; *) echo run >> "{runs}" ;; esac\n'
        f'exec "{toolchain.llvm_tool("mlir-translate")}" "$@"\n')
    (mlir / "mlir-translate").chmod(0o755)
    project = tmp_path / "p"
    project.mkdir()
    names = ["saxpy.nvvm", "multi_kernel.rocdl", "saxpy.rocdl", "multi_kernel.nvvm", "saxpy.nvvm", "saxpy.rocdl"]
    lines = [f"env = Environment(tools=['mlirgpu'], toolpath=[{TOOLPATH!r}])"]
    for index, name in enumerate(names):
        instantiate(os.path.join(CORPUS, f"{name}.mlir"), project / f"k{index}.mlir",
                    "gfx942" if "rocdl" in name else "sm_80", index % 4)
        lines.append(f"env.GpuObject('k{index}', 'k{index}.mlir')")
    (project / "SConstruct").write_text("\n".join(lines) + "\n")
    environ = dict(os.environ, MLIR_BIN=str(mlir), MLIRGPU_SERVER="off")
    run = subprocess.run([SCONS, "-Q", "-j2", "GPU_CACHE=0"] + ([f"GPU_REMOTE_CACHE={remote}"] if remote else []),
                         cwd=project, env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert all((project / f"k{index}.o").exists() for index in range(len(names)))
    assert runs.read_text().splitlines() == ["run"]


@pytest.mark.parametrize("setting,source,expected", [
    ("", "[#nvvm.target<chip = 5>, #rocdl.target<chip = 5>]", "k.mlir:3: error: expected string"),
    ("GPU_CHIP=5", "", "unknown nvvm chip '5' (fix: use one of LLVM's nvvm processors"),
    ("GPU_OPT_LEVEL=3", "", ""),
    ("GPU_EXECUTOR=5", None, "'5' is not a Dask scheduler address"),
    ("GPU_SUBSTITUTE='afile'", None, "GPU_SUBSTITUTE=afile: File "),
    ("GPU_DUMPDIR='afile'", None, "GPU_DUMPDIR=afile: File "),
    ("GPU_HEADER='adir'", None, "GPU_HEADER=adir: Directory "),
    ("GPU_LINKLIBS=['adir']", None, "GPU_LINKLIBS=adir: Directory "),
    ("GPU_TRACE='adir'", None, "GPU_TRACE=adir: Directory "),
], ids=["chip = 5 in two targets", "GPU_CHIP=5", "GPU_OPT_LEVEL=3", "GPU_EXECUTOR=5", "GPU_SUBSTITUTE=file",
        "GPU_DUMPDIR=file", "GPU_HEADER=folder", "GPU_LINKLIBS=folder", "GPU_TRACE=folder"])
def test_a_value_of_the_wrong_kind_in_a_build_file_is_one_line(tmp_path, setting, source, expected):
    """Values a build file sets (numbers, a file where a folder is meant, target parameters of the wrong type) are
    used as text where that is meaningful, else refused with one line naming them; never a traceback while
    SCons reads the build."""
    from corpusutil import CORPUS, instantiate
    from sconsutil import TOOLPATH

    if source == "":  # no target in the file: the build's GPU_TARGET and GPU_CHIP apply
        shutil.copy(os.path.join(CORPUS, "vecadd.neutral.mlir"), tmp_path / "k.mlir")
    else:
        instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    if source:
        text = (tmp_path / "k.mlir").read_text()
        (tmp_path / "k.mlir").write_text(text.replace('[#nvvm.target<chip = "sm_80", O = 3>]', source))
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}], GPU_TARGET='nvvm')\n"
        + (f"env.Replace({setting})\n" if setting else "") + "env.GpuObject('k', 'k.mlir')\n")
    run = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert "Traceback" not in run.stderr and "File \"/" not in run.stderr, run.stderr
    if not expected:
        assert run.returncode == 0 and (tmp_path / "k.o").exists(), run.stderr
        return
    errors = [line for line in run.stderr.splitlines() if line.startswith("scons: ***")]
    assert run.returncode != 0 and len(errors) == 1 and expected in errors[0], run.stderr


ROUGH_MAIN = '#include <stdio.h>\n#include "k.h"\nint main(void) { return saxpy_rocdl_binary_size < 64; }\n'


def test_the_generated_header_is_found_under_variant_dir_without_cpppath_and_with_jobs(tmp_path):
    """VariantDir(duplicate=0) reads main.c from the source folder and writes k.h into the build folder: the tool
    puts the header's folder on the declaring environment's include path, so the C compile finds it and, with
    -j2 from clean, starts only after it exists."""
    from corpusutil import CORPUS, instantiate

    src = tmp_path / "src"
    src.mkdir()
    instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), src / "k.mlir", "gfx942", 3)
    (src / "main.c").write_text(ROUGH_MAIN)
    (src / "SConscript").write_text("Import('env')\nenv.Program('app', ['main.c', env.GpuObject('k', 'k.mlir')])\n")
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "SConscript('src/SConscript', variant_dir='build', duplicate=0, exports='env')\n")
    for _ in range(2):
        run = subprocess.run([SCONS, "-Q", "-j2"], cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert subprocess.run([str(tmp_path / "build" / "app")]).returncode == 0
        subprocess.run([SCONS, "-Q", "-c"], cwd=tmp_path, capture_output=True, check=True)


def test_a_project_with_its_own_variables_adds_ours_and_stays_quiet(tmp_path):
    """A project that checks UnknownVariables() (as apache/serf does) adds the GPU_* variables to its own with
    mlirgpu.add_variables: no warning for GPU_TARGET or DUMP, and `scons -h` lists them."""
    from corpusutil import CORPUS, instantiate

    instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    site = os.path.dirname(TOOLPATH)
    (tmp_path / "SConstruct").write_text(
        f"import sys\nsys.path.insert(0, {site!r})\nimport mlirgpu\n"
        "opts = Variables()\nopts.Add('PREFIX', 'install folder', '/usr/local')\nmlirgpu.add_variables(opts)\n"
        "env = Environment(variables=opts, tools=['default', 'mlirgpu'], toolpath=[mlirgpu.TOOLPATH])\n"
        "unknown = opts.UnknownVariables()\nif unknown:\n    print('Warning: Used unknown variables:', "
        "', '.join(unknown.keys()))\nHelp(opts.GenerateHelpText(env))\nenv.GpuObject('k', 'k.mlir')\n")
    run = subprocess.run([SCONS, "-Q", "GPU_TARGET=rocdl", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0 and "unknown variables" not in run.stdout, run.stdout + run.stderr
    assert (tmp_path / "k.dumps" / "saxpy_rocdl.isa").exists() and (tmp_path / "k.h").exists()
    assert "--header k.h" in run.stdout  # adding the variables sets none of them: the default header stays
    helped = subprocess.run([SCONS, "-h"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "GPU_TARGET" in helped and "PREFIX" in helped


def test_gpu_dumps_of_a_program_built_from_mlir_sources(tmp_path):
    """`env.Program('app', ['main.c', 'k.mlir'])` makes the object itself: env.GpuDumps(program) still names its
    dumps, so an alias can build or collect them."""
    from corpusutil import CORPUS, instantiate

    instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    (tmp_path / "main.c").write_text(ROUGH_MAIN)
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "app = env.Program('app', ['main.c', 'k.mlir'])\n"
        "dumps = env.GpuDumps(app)\nprint('dumps:', sorted(str(d) for d in dumps))\nenv.Alias('dumps', dumps)\n")
    run = subprocess.run([SCONS, "-Q", "DUMP=1", "dumps"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "k.dumps/saxpy_rocdl.isa" in run.stdout and (tmp_path / "k.dumps" / "saxpy_rocdl.isa").exists()
