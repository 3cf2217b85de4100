"""Refusals on real code tell the truth and a fix that works: the test applies the fix the message gives and the
compile then succeeds (host code with dialects the host lowering leaves in place, upstream pipelines' defaults
that the toolkit refuses)."""
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT

REFUSALS = os.path.join(CORPUS, "refusals")
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))


def compile_(source, *args, cwd):
    return subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(cwd / "k.o"), *args],
                          capture_output=True, text=True, env=ENV, cwd=cwd)


def fixed_lowering(message):
    """The `--lowering '...'` the message's fix gives."""
    match = re.search(r"--lowering ('(?:[^']|'\\'')*'|\S+)", message)
    assert match, message
    return shlex.split(match.group(1))[0]


@pytest.mark.parametrize("name,op,lowering", [("host_vector_print", "vector.print", "built-in"),
                                              ("host_async", "async.execute", "built-in"),
                                              ("host_async", "async.execute", "upstream pipeline")])
def test_host_dialects_left_in_place_are_named_with_a_lowering_that_works(name, op, lowering, tmp_path):
    source = os.path.join(REFUSALS, f"{name}.mlir")
    first = {"built-in": ["--target", "nvvm", "--chip", "sm_80"],
             "upstream pipeline": ["--lowering", "gpu-lower-to-nvvm-pipeline{cubin-chip=sm_80 cubin-features=+ptx80}"]}
    run = compile_(source, *first[lowering], cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    line_of_op = next(i for i, text in enumerate(open(source, encoding="utf-8"), 1)
                      if op in text and not text.startswith("//"))
    assert lines[0].startswith(f"mlirgpu: {source}:{line_of_op}: error: host code holds '{op}'"), lines[0]
    assert "not found" not in lines[0] and "--host-code ignore" in lines[0]
    build = first[lowering] if lowering == "built-in" else []  # the fixed pipeline replaces the first
    again = compile_(source, *build, "--lowering", fixed_lowering(lines[0]), "--dump-intermediates",
                     str(tmp_path / "d"), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "k.o").exists() and (tmp_path / "d" / "host.ll").exists()


def test_an_upstream_pipelines_default_chip_that_ptxas_refuses_names_the_fix(tmp_path):
    """gpu-lower-to-nvvm-pipeline alone means sm_50 and +ptx60: CUDA 13's ptxas refuses sm_50, and PTX 6.0 is too
    old for the chips it takes. The message says so in one line with the reason (not a cut-off "Log:"), naming
    both the chip and the features, and the two flags it names compile (no second round trip)."""
    source = os.path.join(CORPUS, "pipelines", "all_reduce_and.mlir")
    run = compile_(source, "--lowering", "-gpu-lower-to-nvvm-pipeline", cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert "sm_50" in lines[0] and "ptxas" in lines[0], lines[0]
    fix = re.search(r"use (--chip sm_\d+) (--features \+ptx\d+)", lines[0])
    assert fix, lines[0]
    again = compile_(source, "--lowering", "-gpu-lower-to-nvvm-pipeline", *fix.group(1).split(),
                     *fix.group(2).split(), cwd=tmp_path)
    assert again.returncode == 0, again.stderr


def test_upstreams_pipeline_lowers_vector_host_code_itself(tmp_path):
    source = os.path.join(REFUSALS, "host_vector_print.mlir")
    run = compile_(source, "--lowering", "gpu-lower-to-nvvm-pipeline{cubin-chip=sm_80 cubin-features=+ptx80}",
                   cwd=tmp_path)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("name,op,target,chip", [("device_linalg_memref", "linalg.matmul", "nvvm", "sm_90"),
                                                 ("device_linalg_memref", "linalg.matmul", "rocdl", "gfx942"),
                                                 ("device_nvgpu_mbarrier", "nvgpu.mbarrier.create", "nvvm", "sm_90")])
def test_device_dialects_the_built_in_lowering_does_not_take_are_named_with_a_lowering_that_works(
        name, op, target, chip, tmp_path):
    source = os.path.join(REFUSALS, f"{name}.mlir")
    run = compile_(source, "--target", target, "--chip", chip, cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    line_of_op = next(i for i, text in enumerate(open(source, encoding="utf-8"), 1)
                      if op in text and not text.startswith("//"))
    assert lines[0].startswith(f"mlirgpu: {source}:{line_of_op}: error: gpu.module @kernels holds '{op}' "
                               f"({op.split('.')[0]} dialect)"), lines[0]
    again = compile_(source, "--target", target, "--chip", chip, "--lowering", fixed_lowering(lines[0]),
                     cwd=tmp_path)
    assert again.returncode == 0, again.stderr


def test_an_nvidia_only_dialect_for_another_target_names_the_target_it_needs(tmp_path):
    source = os.path.join(REFUSALS, "device_nvgpu_mbarrier.mlir")
    run = compile_(source, "--target", "rocdl", cwd=tmp_path)
    assert run.returncode == 1 and "(fix: the nvgpu dialect is for nvvm only: set --target nvvm)" in run.stderr


def test_a_missing_target_is_named_in_each_callers_terms_with_the_targets_to_choose(tmp_path):
    """No target for target-neutral code: the plain CLI says --target, SCons GPU_TARGET, each with the registered
    targets; `list-outputs` (a build system's configure step) fails as the compile does."""
    from sconsutil import TOOLPATH, scons

    source = tmp_path / "k.mlir"
    shutil.copy(os.path.join(ROOT, "examples", "cmake", "scale.mlir"), source)
    run = compile_(str(source), cwd=tmp_path)
    assert run.returncode == 1 and run.stderr == f"mlirgpu: {source}:3: error: gpu.module @scale_module has no " \
        "target (fix: set --target nvvm|rocdl|xevm (and --chip) or give the module a target attribute " \
        "(#nvvm.target, #rocdl.target, #xevm.target))\n", run.stderr
    listing = subprocess.run([sys.executable, "-m", "mlirgpu", "list-outputs", str(source), "-o", "k.o"],
                             capture_output=True, text=True, env=ENV, cwd=tmp_path)
    assert listing.returncode == 1 and listing.stdout == "" and listing.stderr == run.stderr
    (tmp_path / "SConstruct").write_text(f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
                                         "env.GpuObject('k', 'k.mlir')\n")
    built = scons(tmp_path, check=False)
    assert built.returncode != 0 and "(fix: set GPU_TARGET=nvvm|rocdl|xevm (and GPU_CHIP) or give the module a " \
        "target attribute" in built.stderr, built.stderr


def test_each_command_of_one_process_says_fixes_in_its_own_callers_terms(tmp_path, capsys):
    """A compile server's runner serves command after command in one process: a plain command after one run
    with `--caller cmake` says the CLI's `--target` again."""
    from mlirgpu.frontends.cli import main

    source = str(tmp_path / "k.mlir")
    shutil.copy(os.path.join(ROOT, "examples", "cmake", "scale.mlir"), source)
    said = []
    for caller in (["--caller", "cmake"], [], ["--caller", "meson"]):
        assert main(["compile", *caller, source, "-o", str(tmp_path / "k.o")]) == 1
        said.append(re.search(r"fix: set (\S+)", capsys.readouterr().err).group(1))
    assert said == ["-DGPU_TARGET=nvvm|rocdl|xevm", "--target", "-Dgpu_target=nvvm|rocdl|xevm"]


@pytest.mark.parametrize("target", ["rocdl", "xevm"])
def test_cf_assert_fails_as_upstream_fails_with_the_line_and_the_target_that_takes_it(target, tmp_path):
    from mlirgpu.llvm import toolchain
    from mlirgpu.targets import TARGETS

    source = os.path.join(REFUSALS, "device_cf_assert.mlir")
    chip = TARGETS[target].default_chip
    upstream = subprocess.run([toolchain.llvm_tool("mlir-opt"), source,
                               f"--pass-pipeline={TARGETS[target].lowering.lowering_pipeline([chip], '', 2)}"],
                              capture_output=True, text=True)
    assert upstream.returncode != 0  # upstream's lowering refuses it too
    run = compile_(source, "--target", target, cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    line_of_op = next(i for i, text in enumerate(open(source, encoding="utf-8"), 1) if "cf.assert %" in text)
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert lines[0].startswith(f"mlirgpu: {source}:{line_of_op}: error: ") and "cf.assert for nvvm only" in lines[0]
    assert compile_(source, "--target", "nvvm", cwd=tmp_path).returncode == 0


def test_a_ptx_version_too_old_for_the_chip_names_the_feature_that_fixes_it(tmp_path):
    """gpu-lower-to-nvvm-pipeline's default features (+ptx60) with cubin-chip=sm_80: LLVM aborts, upstream and
    ours alike; our line keeps LLVM's reason and names the feature to set, which then compiles."""
    from mlirgpu.llvm import toolchain

    source = os.path.join(CORPUS, "pipelines", "all_reduce_and.mlir")
    pipeline = "-gpu-lower-to-nvvm-pipeline=cubin-chip=sm_80"
    upstream = subprocess.run([toolchain.llvm_tool("mlir-opt"), source, pipeline], capture_output=True, text=True)
    assert upstream.returncode != 0 and "PTX version" in upstream.stderr
    run = compile_(source, "--lowering", pipeline, cwd=tmp_path)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert "PTX version 6.0 does not support target 'sm_80'" in lines[0] and "--features +ptx80" in lines[0]
    assert compile_(source, "--lowering", pipeline, "--features", "+ptx80", cwd=tmp_path).returncode == 0
