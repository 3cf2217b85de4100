"""Substitutes (`--substitute DIR` / GPU_SUBSTITUTE): a hand-edited stage output replaces that stage, the later
stages run from it, and the build says so; a substitute that does not fit the job is an error naming it."""
import json
import os
import re
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from sconsutil import SCONS, TOOLPATH

SITE = os.path.join(ROOT, "site_scons")


def mlirgpu(*args, cwd):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SITE})


def _compile(tmp_path, source, *extra, dumps="D"):
    run = mlirgpu("compile", source, "-o", "k.o", "--dump-intermediates", dumps, *extra, cwd=tmp_path)
    return run


def _record(folder):
    return json.loads((folder / "mlirgpu.json").read_text())


def test_a_ptx_substitute_with_a_changed_constant_is_what_ptxas_makes_the_cubin_of(tmp_path, cuda_root):
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert _compile(tmp_path, source, "--format", "bin").returncode == 0
    ptx = (tmp_path / "D" / "saxpy_nvvm.isa").read_text()
    edited = re.sub(r"add\.rn\.f32 \t(%r\d+), (%r\d+), %r\d+;", r"add.rn.f32 \t\1, \2, 0f40490FDB;", ptx)
    assert edited != ptx
    (tmp_path / "S").mkdir()
    (tmp_path / "S" / "saxpy_nvvm.isa").write_text(edited)
    run = _compile(tmp_path, source, "--format", "bin", "--substitute", "S", dumps="D2")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("warning:") == 1 and "S/saxpy_nvvm.isa" in run.stderr
    # The cubin is ptxas's, run by hand on the substitute with the build's flags.
    subprocess.run([os.path.join(cuda_root, "bin", "ptxas"), "-arch", "sm_80", "S/saxpy_nvvm.isa", "-o", "hand.cubin",
                    "--opt-level", "3"], cwd=tmp_path, check=True)
    cubin = (tmp_path / "D2" / "saxpy_nvvm.cubin").read_bytes()
    assert cubin == (tmp_path / "hand.cubin").read_bytes() != (tmp_path / "D" / "saxpy_nvvm.cubin").read_bytes()
    assert (tmp_path / "D2" / "saxpy_nvvm.isa").read_text() == edited
    assert cubin in (tmp_path / "k.o").read_bytes()
    record = _record(tmp_path / "D2")
    assert record["substituted"] is True
    assert record["jobs"][0]["substituted"] == {"isa": "S/saxpy_nvvm.isa"}
    assert record["jobs"][0]["stages"]["isa"] == "substituted" and record["jobs"][0]["stages"]["binary"] == "ran"
    assert _record(tmp_path / "D")["substituted"] is False


def test_an_amdgcn_substitute_is_what_llvm_mc_and_lld_make_the_hsaco_of(tmp_path):
    from mlirgpu.llvm import toolchain

    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    assert _compile(tmp_path, source, "--format", "bin").returncode == 0
    isa = (tmp_path / "D" / "saxpy_rocdl.isa").read_text()
    edited = isa.replace("\ts_endpgm", "\ts_nop 7\n\ts_endpgm", 1)
    assert edited != isa
    (tmp_path / "S").mkdir()
    (tmp_path / "S" / "saxpy_rocdl.isa").write_text(edited)
    run = _compile(tmp_path, source, "--format", "bin", "--substitute", "S", dumps="D2")
    assert run.returncode == 0, run.stderr
    subprocess.run([toolchain.llvm_tool("llvm-mc"), "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    "S/saxpy_rocdl.isa", "-o", "hand.o"], cwd=tmp_path, check=True)
    subprocess.run([toolchain.llvm_tool("ld.lld"), "-shared", "hand.o", "-o", "hand.hsaco"], cwd=tmp_path, check=True)
    hsaco = (tmp_path / "D2" / "saxpy_rocdl.hsaco").read_bytes()
    assert hsaco == (tmp_path / "hand.hsaco").read_bytes() != (tmp_path / "D" / "saxpy_rocdl.hsaco").read_bytes()
    assert hsaco in (tmp_path / "k.o").read_bytes()


def test_an_optimized_ir_substitute_flows_through_isa_and_binary(tmp_path, cuda_root):
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert _compile(tmp_path, source).returncode == 0
    opt = (tmp_path / "D" / "saxpy_nvvm.opt.ll").read_text()
    edited = opt.replace("fmul ", "fdiv ", 1)
    assert edited != opt
    (tmp_path / "S").mkdir()
    (tmp_path / "S" / "saxpy_nvvm.opt.ll").write_text(edited)
    run = _compile(tmp_path, source, "--substitute", "S", dumps="D2")
    assert run.returncode == 0, run.stderr
    assert "div.rn.f32" in (tmp_path / "D2" / "saxpy_nvvm.isa").read_text()
    assert "div.rn.f32" not in (tmp_path / "D" / "saxpy_nvvm.isa").read_text()
    stages = _record(tmp_path / "D2")["jobs"][0]["stages"]
    assert stages == {"initial.ll": "cached", "linked.ll": "cached", "opt.ll": "substituted", "isa": "ran",
                      "binary": "ran"}
    # The fatbin holds the cubin made from the substitute's ISA.
    assert (tmp_path / "D2" / "saxpy_nvvm.cubin").read_bytes() != (tmp_path / "D" / "saxpy_nvvm.cubin").read_bytes()


BAD = {
    "not IR": ("saxpy_nvvm.opt.ll", lambda ok: "this is not LLVM IR\n", "not valid LLVM IR"),
    "wrong triple": ("saxpy_nvvm.linked.ll", lambda ok: ok.replace("nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa"),
                     "its triple is amdgcn-amd-amdhsa"),
    "kernel removed": ("saxpy_nvvm.opt.ll", lambda ok: ok.replace("@saxpy(", "@renamed("),
                       "kernel saxpy of module @saxpy_nvvm is not defined in it"),
    "isa for another chip": ("saxpy_nvvm.isa", lambda ok: ok.replace(".target sm_80", ".target sm_90"),
                             "it is ISA for sm_90, the job's chip is sm_80"),
    "isa without the kernel": ("saxpy_nvvm.isa", lambda ok: ok.replace("saxpy", "other"),
                               "kernel saxpy of module @saxpy_nvvm is not in it"),
    "binary of another kind": ("saxpy_nvvm.fatbin", lambda ok: "not a fatbin", "it is not a fatbin file"),
    "binary that is not embedded": ("saxpy_nvvm.cubin", lambda ok: "\x7fELF saxpy",
                                    "the .cubin is not what this build embeds (the .fatbin)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_substitute_that_does_not_fit_is_an_error_naming_it(case, tmp_path, cuda_root):
    name, make, why = BAD[case]
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert _compile(tmp_path, source).returncode == 0
    dumped = tmp_path / "D" / name
    (tmp_path / "S").mkdir()
    (tmp_path / "S" / name).write_text(make(dumped.read_text(errors="replace") if name.endswith((".ll", ".isa"))
                                            else ""))
    (tmp_path / "k.o").unlink()
    run = _compile(tmp_path, source, "--substitute", "S", dumps="D2")
    assert run.returncode == 1 and not (tmp_path / "k.o").exists()
    assert run.stderr.startswith(f"mlirgpu: S/{name}: error: substitute 'S/{name}': {why}"), run.stderr
    assert "(fix: " in run.stderr and "Traceback" not in run.stderr


def test_xevm_takes_no_isa_substitute(tmp_path):
    source = instantiate(os.path.join(CORPUS, "saxpy.xevm.mlir"), tmp_path / "k.mlir", "pvc", 3)
    assert _compile(tmp_path, source).returncode == 0
    (tmp_path / "S").mkdir()
    isa = next((tmp_path / "D").glob("*.isa"))
    (tmp_path / "S" / isa.name).write_text(isa.read_text())
    run = _compile(tmp_path, source, "--substitute", "S", dumps="D2")
    assert run.returncode == 1 and "makes its binary from the optimized module" in run.stderr
    assert "substitute saxpy_xevm.opt.ll instead" in run.stderr


def test_scons_rebuilds_when_a_substitute_is_added_edited_or_removed(tmp_path, cuda_root):
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{os.path.join(SITE, 'site_tools')!r}])\n"
        "env.GpuObject('k', 'k.mlir', GPU_FORMAT='bin')\n")
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    (tmp_path / "S").mkdir()

    def scons(*args):
        run = subprocess.run([SCONS, "-Q", "DUMP=1", "GPU_SUBSTITUTE=S", *args], cwd=tmp_path, capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        return run

    scons()
    original = (tmp_path / "k.o").read_bytes()
    assert "is up to date" in scons().stdout
    ptx = (tmp_path / "k.dumps" / "saxpy_nvvm.isa").read_text()
    substitute = tmp_path / "S" / "saxpy_nvvm.isa"
    for constant in ("0f40490FDB", "0f3F800000"):  # added, then edited
        substitute.write_text(re.sub(r"add\.rn\.f32 \t(%r\d+), (%r\d+), %r\d+;", rf"add.rn.f32 \t\1, \2, {constant};",
                                     ptx))
        run = scons()
        assert "S/saxpy_nvvm.isa" in run.stderr and "warning" in run.stderr
        subprocess.run([os.path.join(cuda_root, "bin", "ptxas"), "-arch", "sm_80", str(substitute), "-o", "hand.cubin",
                        "--opt-level", "3"], cwd=tmp_path, check=True)
        assert (tmp_path / "k.dumps" / "saxpy_nvvm.cubin").read_bytes() == (tmp_path / "hand.cubin").read_bytes()
        assert (tmp_path / "hand.cubin").read_bytes() in (tmp_path / "k.o").read_bytes()
        assert "is up to date" in scons().stdout
    substitute.unlink()
    run = scons()
    assert "warning" not in run.stderr
    assert (tmp_path / "k.o").read_bytes() == original
    assert _record(tmp_path / "k.dumps")["substituted"] is False


def test_the_manifest_and_reports_mark_substituted_jobs_and_a_gate_can_refuse_them(tmp_path, cuda_root):
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert _compile(tmp_path, source).returncode == 0
    (tmp_path / "S").mkdir()
    (tmp_path / "S" / "saxpy_nvvm.opt.ll").write_text((tmp_path / "D" / "saxpy_nvvm.opt.ll").read_text())
    assert _compile(tmp_path, source, "--substitute", "S", dumps="D2").returncode == 0
    clean = mlirgpu("artifacts", "D", "-o", "A", "--fail-on", "substituted", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    gated = mlirgpu("artifacts", "D2", "-o", "B", "--fail-on", "substituted", cwd=tmp_path)
    assert gated.returncode == 1 and "substituted:" in gated.stderr and "S/saxpy_nvvm.opt.ll" in gated.stderr
    manifest = json.loads((tmp_path / "B" / "gpu-manifest.json").read_text())
    assert manifest["objects"][0]["jobs"][0]["substituted"] == {"opt.ll": "S/saxpy_nvvm.opt.ll"}
    for report in ("gpu-report.md", "gpu-report.html"):
        assert "Substituted stages" in (tmp_path / "B" / report).read_text()
        assert "Substituted stages" not in (tmp_path / "A" / report).read_text()


def test_a_folder_named_like_a_dump_is_one_line_and_other_names_are_not_looked_at(tmp_path, cuda_root):
    """In the substitute folder, a folder named like a job's dump is an error naming it, from the CLI and from
    SCons, never a traceback; a file or folder named like a dump of a module this source lacks is not looked at."""
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    (tmp_path / "S" / "saxpy_nvvm.isa").mkdir(parents=True)
    (tmp_path / "S" / "other_module.isa").write_text("not PTX\n")
    (tmp_path / "S" / "other_module.opt.ll").mkdir()
    run = _compile(tmp_path, source, "--substitute", "S")
    assert run.returncode == 1 and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("mlirgpu: S/saxpy_nvvm.isa: error: substitute 'S/saxpy_nvvm.isa': it is a folder")
    assert "(fix: " in run.stderr
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{os.path.join(SITE, 'site_tools')!r}])\n"
        "env.GpuObject('k', 'k.mlir')\n")
    run = subprocess.run([SCONS, "-Q", "DUMP=1", "GPU_SUBSTITUTE=S"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 2 and 'File "' not in run.stdout + run.stderr  # no traceback's frames
    assert "error: substitute 'S/saxpy_nvvm.isa': it is a folder" in run.stderr
    (tmp_path / "S" / "saxpy_nvvm.isa").rmdir()
    run = _compile(tmp_path, source, "--substitute", "S")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert _record(tmp_path / "D")["substituted"] is False


def test_scons_gate_on_substituted_stages_names_its_rule_not_a_baseline(tmp_path, cuda_root):
    """GPU_FAIL_ON=substituted without GPU_BASELINE: gpu-artifacts fails saying the rule broke, not speaking of
    regressions against a baseline that was never given."""
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert _compile(tmp_path, source).returncode == 0
    (tmp_path / "S").mkdir()
    (tmp_path / "S" / "saxpy_nvvm.opt.ll").write_text((tmp_path / "D" / "saxpy_nvvm.opt.ll").read_text())
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\nenv.GpuObject('k', 'k.mlir')\n")
    run = subprocess.run([SCONS, "-Q", "DUMP=1", "GPU_SUBSTITUTE=S", "GPU_FAIL_ON=substituted",
                          "gpu-artifacts"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0 and "GPU_FAIL_ON rules broken: substituted:" in run.stderr, run.stderr
    assert "baseline" not in run.stderr
