"""Reproduction: `sh repro.sh` in a copy of a dump folder whose ISA and binaries were deleted remakes them byte for
byte with the stock tools (llc, ptxas, fatbinary, llvm-mc, ld.lld), for every target; the record holds the same
commands; the approximate ones (llvm-link, opt) at least run."""
import filecmp
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS, ROOT, instantiate

SITE = os.path.join(ROOT, "site_scons")

CASES = {  # corpus file, chip, compile options
    "nvvm saxpy fatbin": ("saxpy.nvvm.mlir", "sm_80", ["--format", "fatbin"]),
    "nvvm libdevice, ptxas options": ("ptxas_opts.nvvm.mlir", "sm_90", ["--format", "fatbin"]),
    "nvvm math libdevice bin, prefix": ("math_libdevice.nvvm.mlir", "sm_90", ["--format", "bin", "--dump-prefix", "p_"]),
    "nvvm two chips": ("vec_scale.multi.nvvm.mlir", "", ["--format", "fatbin"]),
    "rocdl saxpy": ("saxpy.rocdl.mlir", "gfx942", ["--format", "bin"]),
    "rocdl ocml": ("math_ocml.rocdl.mlir", "gfx942", ["--format", "bin"]),
    "rocdl two chips bundle": ("vec_scale.multi.rocdl.mlir", "", ["--format", "fatbin"]),
    "xevm several modules": ("multi_module.xevm.mlir", "bmg", ["--format", "bin"]),
    "neutral for rocdl": ("vecadd.neutral.mlir", "", ["--target", "rocdl", "--chip", "gfx90a", "--format", "bin"]),
    "isa only": ("saxpy.nvvm.mlir", "sm_90", ["--format", "isa"]),
}
REMADE = (".isa", ".cubin", ".fatbin", ".hsaco", ".spv")


@pytest.mark.parametrize("case", sorted(CASES))
def test_repro_sh_remakes_the_isa_and_binaries_byte_for_byte(case, tmp_path, cuda_root):
    corpus, chip, options = CASES[case]
    source = instantiate(os.path.join(CORPUS, corpus), tmp_path / "k.mlir", chip, 3)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--dump-intermediates",
                          "D", *options], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SITE})
    assert run.returncode == 0, run.stderr
    prefix = options[options.index("--dump-prefix") + 1] if "--dump-prefix" in options else ""
    dumps = tmp_path / "D"
    record = json.loads((dumps / f"{prefix}mlirgpu.json").read_text())
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(dumps, copy)
    remade = sorted(name for name in os.listdir(copy) if name.endswith(REMADE))
    assert remade and any(name.endswith(".isa") for name in remade)
    for name in remade:
        (copy / name).unlink()
    run = subprocess.run(["sh", f"{prefix}repro.sh"], cwd=copy, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(os.listdir(copy)) == sorted(os.listdir(dumps))  # nothing missing, nothing left over
    different = [name for name in remade if not filecmp.cmp(dumps / name, copy / name, shallow=False)]
    assert different == []
    # The record holds the commands the script runs (the exact ones), per job and stage.
    script = (copy / f"{prefix}repro.sh").read_text()
    for job in record["jobs"]:
        stages = [entry["stage"] for entry in job["repro"]]
        assert stages[:3] == ["linked.ll", "opt.ll", "isa"]
        assert ("binary" in stages) == ("--format" in options and options[options.index("--format") + 1] != "isa")
        for entry in job["repro"]:
            assert entry["exact"] == (entry["stage"] in ("isa", "binary"))
            assert os.path.basename(entry["argv"][0]) in script


def test_the_approximate_commands_run_and_make_the_same_code(tmp_path, cuda_root):
    """llvm-link and opt remake the linked and optimized IR with other text; llc on opt's output still gives
    the same PTX, so the difference is the text, not the code."""
    source = instantiate(os.path.join(CORPUS, "math_libdevice.nvvm.mlir"), tmp_path / "k.mlir", "sm_90", 3)
    subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--dump-intermediates", "D"],
                   cwd=tmp_path, check=True, env={**os.environ, "PYTHONPATH": SITE})
    record = json.loads((tmp_path / "D" / "mlirgpu.json").read_text())
    job = record["jobs"][0]
    work = tmp_path / "work"
    shutil.copytree(tmp_path / "D", work)
    for entry in job["repro"]:
        if entry["stage"] == "opt.ll":  # from our linked IR, as the script's comment reads
            subprocess.run(entry["argv"], cwd=work, check=True)
        if entry["stage"] == "isa":
            subprocess.run(entry["argv"], cwd=work, check=True)
    assert (work / f"{job['stem']}.isa").read_bytes() == (tmp_path / "D" / f"{job['stem']}.isa").read_bytes()
    linked = next(entry for entry in job["repro"] if entry["stage"] == "linked.ll")
    subprocess.run(linked["argv"], cwd=work, check=True)
    assert "define" in (work / f"{job['stem']}.linked.ll").read_text()
