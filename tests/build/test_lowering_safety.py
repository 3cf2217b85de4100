"""`--lowering` / `GPU_LOWERING` / CMake's GPU_LOWERING hold passes and pass pipelines only (issue 39): a word of
mlir-opt's that loads a plugin (whose code would run while the build is only planned: `list-outputs`, a CMake
configure, `scons -n`) or writes a file the build does not declare is refused by name, before any mlir-opt sees
it; and the messages a user migrating from upstream's RUN lines meets name the fix in one go."""
import os
import re
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT
from runlines import run_line
from sconsutil import SCONS, TOOLPATH

PIPELINES = os.path.join(CORPUS, "pipelines")
SOURCE = os.path.join(PIPELINES, "all_reduce_and.mlir")  # target-neutral: gpu.launch, lowered by the pipeline
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
UPSTREAM = 'gpu-lower-to-nvvm-pipeline{cubin-chip=sm_80 cubin-features=+ptx80}'

# (the flag, what it would leave behind, the reason the refusal gives)
FLAGS = {
    "load-pass-plugin": ("--load-pass-plugin={plugin}", "marker", "loads code into mlir-opt"),
    "load-dialect-plugin": ("--load-dialect-plugin={plugin}", "marker", "loads code into mlir-opt"),
    "log-actions-to": ("--log-actions-to={written}", "written", "writes a file the build does not declare"),
    "profile-actions-to": ("--profile-actions-to={written}", "written", "writes a file the build does not declare"),
}
SPELLINGS = {
    "run-line": f"-gpu-lower-to-nvvm-pipeline=\"cubin-chip=sm_80 cubin-features=+ptx80\" {{flag}}",
    "pass-pipeline": f"--pass-pipeline='builtin.module({UPSTREAM})' {{flag}}",
    "pipeline-text": f"builtin.module({UPSTREAM}) {{flag}}",
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """(a real shared object whose constructor writes the marker file when anything loads it, the marker)."""
    folder = tmp_path_factory.mktemp("plugin")
    marker = folder / "plugin-ran"
    (folder / "plugin.c").write_text('#include <stdio.h>\n__attribute__((constructor)) static void ran(void) {\n'
                                     f'  FILE *f = fopen("{marker}", "w");\n  if (f) fclose(f);\n}}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "plugin.so"), str(folder / "plugin.c")], check=True)
    return folder / "plugin.so", marker


def front_end(kind, lowering, folder):
    """The run of `kind` (a compile, `list-outputs`, `scons -n`, a CMake configure) with the lowering, in
    `folder`."""
    folder.mkdir(exist_ok=True)
    if kind in ("compile", "list-outputs"):
        return subprocess.run([sys.executable, "-m", "mlirgpu", kind, SOURCE, "-o", str(folder / "k.o"),
                               "--lowering", lowering], capture_output=True, text=True, env=ENV, cwd=folder)
    (folder / "k.mlir").write_text(open(SOURCE, encoding="utf-8").read())
    if kind == "scons -n":
        (folder / "SConstruct").write_text(
            f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}], GPU_LOWERING={lowering!r})\n"
            "env.GpuObject('k', 'k.mlir')\n")
        return subprocess.run([SCONS, "-Q", "-n"], cwd=folder, capture_output=True, text=True)
    cmake_dir = subprocess.run([sys.executable, "-m", "mlirgpu", "--cmake-dir"], capture_output=True, text=True,
                               env=ENV, check=True).stdout.strip()
    (folder / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(k LANGUAGES C)\n"
                                           "find_package(MLIRGPU CONFIG REQUIRED)\n"
                                           "mlirgpu_add_object(kernels SOURCES k.mlir)\n")
    return subprocess.run(["cmake", "-S", str(folder), "-B", str(folder / "build"), f"-DCMAKE_PREFIX_PATH={cmake_dir}",
                           f"-DGPU_LOWERING={lowering}"], capture_output=True, text=True,
                          env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]))


@pytest.mark.parametrize("kind", ["list-outputs", "compile", "scons -n"])
@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("flag", FLAGS)
def test_a_flag_that_runs_code_or_writes_a_file_is_refused_by_name_and_nothing_runs(flag, spelling, kind, plugin,
                                                                                    tmp_path):
    so, marker = plugin
    written = tmp_path / "actions.log"
    word, left, why = FLAGS[flag]
    word = word.format(plugin=so, written=written)
    run = front_end(kind, SPELLINGS[spelling].replace("{flag}", word), tmp_path / "run")
    if kind == "scons -n":  # SCons reports a source's option errors when it builds it, not in a dry run
        assert not marker.exists() and not written.exists(), f"{left} left behind by scons -n"
        run = subprocess.run([SCONS, "-Q"], cwd=tmp_path / "run", capture_output=True, text=True)
    output = run.stdout + run.stderr
    assert run.returncode != 0, output
    assert f"'{word}' in the lowering pipeline {why}" in output, output
    assert not marker.exists() and not written.exists(), f"{left} left behind"
    assert not (tmp_path / "run" / "k.o").exists()


@pytest.mark.needs("cmake", "./dev test installs it (Debian packages cmake and ninja-build)")
def test_a_cmake_configure_refuses_a_plugin_and_loads_nothing(plugin, tmp_path):
    so, marker = plugin
    run = front_end("cmake", SPELLINGS["run-line"].replace("{flag}", f"--load-pass-plugin={so}"), tmp_path / "run")
    assert run.returncode != 0 and "loads code into mlir-opt" in run.stdout + run.stderr, run.stdout + run.stderr
    assert not marker.exists()


@pytest.mark.parametrize("lowering", [
    "builtin.module(snapshot-op-locations{filename=snap.mlir})",
    "-snapshot-op-locations=filename=snap.mlir -gpu-lower-to-nvvm-pipeline=\"cubin-chip=sm_80 cubin-features=+ptx80\"",
    f"{UPSTREAM}, inline{{default-pipeline=snapshot-op-locations{{filename=snap.mlir}}}}"])
@pytest.mark.parametrize("kind", ["list-outputs", "compile"])
def test_a_pass_that_writes_a_file_is_refused_and_writes_nothing(lowering, kind, tmp_path):
    run = front_end(kind, lowering, tmp_path / "run")
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert "'snapshot-op-locations' in the lowering pipeline writes the IR to its filename= file" in lines[0]
    assert not list(tmp_path.rglob("snap.mlir"))


def test_the_expansion_runs_in_a_scratch_folder(tmp_path, monkeypatch):
    """What the expansion runs (the pipeline on an empty module) writes nothing where the build runs."""
    from mlirgpu.llvm import toolchain
    from mlirgpu.pipeline import lowering

    monkeypatch.chdir(tmp_path)
    args = ("--pass-pipeline=builtin.module(snapshot-op-locations{filename=snap.mlir})",)
    dumped, _message = lowering._dump_pipeline(toolchain.llvm_tool("mlir-opt"), args)
    assert "snapshot-op-locations" in dumped and not os.listdir(tmp_path)


def test_every_pipeline_of_the_corpus_passes_the_allow_list():
    """Each RUN line of tests/corpus/pipelines, and its pass-pipeline form, holds only registered passes
    (test_pasted_pipelines builds them all)."""
    from mlirgpu.pipeline import lowering, passtext

    for name in sorted(os.listdir(PIPELINES)):
        if name.endswith(".mlir"):
            passtext.check_pipeline(lowering.canonical(run_line(os.path.join(PIPELINES, name))))


def compile_(source, *args, cwd):
    return subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(cwd / "k.o"), *args],
                          capture_output=True, text=True, env=ENV, cwd=cwd)


@pytest.mark.parametrize("name, flag", [("all_reduce_and.mlir", "-gpu-lower-to-nvvm-pipeline"),
                                        ("rocdl_two_modules.mlir", "-convert-gpu-to-rocdl"),
                                        ("rocdl_two_modules.mlir", "-rocdl-attach-target")])
def test_an_option_a_pass_does_not_have_names_the_pass_and_the_option_it_takes(name, flag, tmp_path):
    """`arch=` (clang's and nvcc's word for the chip) on a pass of a RUN line: the line names that pass, and the
    option it gives instead (cubin-chip, chipset, chip: the file's own target's, never an NVVM pipeline for a
    ROCDL line) compiles."""
    source = os.path.join(PIPELINES, name)
    line = run_line(source)
    given = re.search(rf"{re.escape(flag)}=\"([^\"]*)\"", line)
    chip = re.search(r"(?:chip|chipset)=(\S+)", given.group(1)).group(1).strip('"')
    wrong = line.replace(given.group(0), f'{flag}="{re.sub(r"(cubin-chip|chipset|chip)=", "arch=", given.group(1))}"')
    run = compile_(source, "--lowering", wrong, cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert f"{flag.lstrip('-')} has no option 'arch'" in lines[0], lines[0]
    if "rocdl" in name:
        assert "nvvm" not in lines[0], lines[0]
    instead = re.search(r"write ([\w-]+),", lines[0]).group(1)
    assert f"--chip {chip}" in lines[0], lines[0]
    fixed = wrong.replace(f"arch={chip}", f"{instead}={chip}")
    assert compile_(source, "--lowering", fixed, cwd=tmp_path).returncode == 0


def test_a_pipeline_mlir_opt_cannot_read_gets_an_example_for_its_own_target(tmp_path):
    source = os.path.join(PIPELINES, "rocdl_two_modules.mlir")
    run = compile_(source, "--lowering", run_line(source).replace("O=3", "O=x"), cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert "e.g. for rocdl --lowering '" in lines[0] and "nvvm" not in lines[0], lines[0]


@pytest.mark.parametrize("wrong", [1, 2])
def test_a_wrong_chip_in_one_of_two_attach_passes_names_that_pass(wrong, tmp_path):
    source = os.path.join(PIPELINES, "rocdl_two_modules.mlir")
    line = run_line(source)
    attach = re.search(r'-rocdl-attach-target="[^"]*"', line).group(0)
    chips = ["gfx90a", "gfx90a"]
    chips[wrong - 1] = "gfx9x0"
    two = line.replace(attach, " ".join(f'-rocdl-attach-target="chip={chip}"' for chip in chips))
    for kind in ("list-outputs", "compile"):
        run = subprocess.run([sys.executable, "-m", "mlirgpu", kind, source, "-o", str(tmp_path / "k.o"),
                              "--lowering", two], capture_output=True, text=True, env=ENV, cwd=tmp_path)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 1 and len(lines) == 1, run.stderr
        assert (f"attach pass {wrong} of 2, rocdl-attach-target{{chip=gfx9x0}}: unknown rocdl chip 'gfx9x0'"
                in lines[0]), lines[0]
