"""Compiler logs: the binary stage keeps its tools' output per job (the `<stem>.log` dump and the record's
`log`), as upstream 23 keeps it on the #gpu.object; the resource report reads it when the compile ran ptxas
with -v, else runs ptxas -v exactly as the compile ran it (the attribute's ptxas-cmd-options included); the HTML
report shows the logs."""
import json
import os
import re
import subprocess
import sys

from corpusutil import CORPUS, ROOT, instantiate

SITE = os.path.join(ROOT, "site_scons")
LIMIT = 24  # registers the attribute allows (libdevice's f64 pow and sin take 32 without it on sm_90)
SOURCE = """
module attributes {gpu.container_module} {
  gpu.module @pow_kernel [#nvvm.target<chip = "sm_90", O = 3, flags = {"ptxas-cmd-options" = ["--maxrregcount=%d"]}>] {
    llvm.func @__nv_pow(f64, f64) -> f64
    llvm.func @__nv_sin(f64) -> f64
    llvm.func @pow_sin(%%a: !llvm.ptr<1>, %%p: f64) attributes {gpu.kernel, nvvm.kernel} {
      %%tid = nvvm.read.ptx.sreg.tid.x : i32
      %%idx = llvm.sext %%tid : i32 to i64
      %%pa = llvm.getelementptr %%a[%%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      %%v = llvm.load %%pa : !llvm.ptr<1> -> f64
      %%w = llvm.call @__nv_pow(%%v, %%p) : (f64, f64) -> f64
      %%s = llvm.call @__nv_sin(%%v) : (f64) -> f64
      %%r = llvm.fadd %%w, %%s : f64
      llvm.store %%r, %%pa : f64, !llvm.ptr<1>
      llvm.return
    }
  }
}
""" % LIMIT


def mlirgpu(*args, cwd):
    run = subprocess.run([sys.executable, "-m", "mlirgpu", *args], cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SITE})
    assert run.returncode == 0, run.stderr
    return run


def _registers(ptxas, ptx, *extra):
    run = subprocess.run([ptxas, "-v", "-arch", "sm_90", "--opt-level", "3", *extra, ptx, "-o", os.devnull],
                         capture_output=True, text=True, check=True)
    return [int(n) for n in re.findall(r"Used (\d+) registers", run.stderr + run.stdout)]


def test_the_report_reads_the_real_compiles_log_or_reruns_its_exact_command(tmp_path, cuda_root):
    (tmp_path / "k.mlir").write_text(SOURCE)
    ptxas = os.path.join(cuda_root, "bin", "ptxas")
    mlirgpu("compile", "k.mlir", "-o", "quiet.o", "--dump-intermediates", "Q", cwd=tmp_path)
    mlirgpu("compile", "k.mlir", "-o", "verbose.o", "--dump-intermediates", "V", "--opts=-v", cwd=tmp_path)
    quiet, verbose = (json.loads((tmp_path / d / "mlirgpu.json").read_text())["jobs"][0] for d in ("Q", "V"))
    assert quiet["log"] == (tmp_path / "Q" / "pow_kernel.log").read_text() == ""  # ptxas said nothing
    log = (tmp_path / "V" / "pow_kernel.log").read_text()
    assert verbose["log"] == log and "Used " in log and "Compile time" not in log
    assert max(_registers(ptxas, str(tmp_path / "Q" / "pow_kernel.isa"))) > LIMIT  # the attribute is what limits
    for folder in ("Q", "V"):
        mlirgpu("artifacts", folder, "-o", f"A{folder}", cwd=tmp_path)
        manifest = json.loads((tmp_path / f"A{folder}" / "gpu-manifest.json").read_text())
        counts = [kernel["registers"] for kernel in manifest["objects"][0]["jobs"][0]["kernels"]]
        assert counts == [LIMIT]
    page = (tmp_path / "AV" / "gpu-report.html").read_text()
    assert "Compiler logs" in page and "<details>" in page and "Used " in page
    assert "Compiler logs" not in (tmp_path / "AQ" / "gpu-report.html").read_text()


def test_a_tools_warning_is_kept(tmp_path, cuda_root):
    (tmp_path / "k.mlir").write_text(SOURCE.replace(f"--maxrregcount={LIMIT}", "--maxrregcount=16"))
    mlirgpu("compile", "k.mlir", "-o", "k.o", "--dump-intermediates", "D", cwd=tmp_path)
    log = (tmp_path / "D" / "pow_kernel.log").read_text()
    assert log.startswith("ptxas warning") and "count of 16 to lower bound of 24" in log


def test_lld_and_llvm_mc_messages_are_kept_and_the_log_is_the_same_from_the_stage_cache(tmp_path):
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    for folder in ("A", "B"):  # cold, then the binary stage from the stage cache
        mlirgpu("compile", source, "-o", "k.o", "--dump-intermediates", folder, "--format", "bin", cwd=tmp_path)
    record = json.loads((tmp_path / "B" / "mlirgpu.json").read_text())
    assert record["jobs"][0]["stages"]["binary"] == "cached"
    assert (tmp_path / "A" / "saxpy_rocdl.log").read_bytes() == (tmp_path / "B" / "saxpy_rocdl.log").read_bytes()
    assert "saxpy_rocdl.log" in record["dumps"]
