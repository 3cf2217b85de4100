"""Running real `scons` in temporary projects for the SCons tool tests."""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

from corpusutil import CORPUS, ROOT, instantiate

SCONS = os.path.join(os.path.dirname(sys.executable), "scons")
TOOLPATH = os.path.join(ROOT, "site_scons", "site_tools")

SCONSTRUCT = """\
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}])
env.SetDefault(MLIRGPU_EXTRA=1)
env.SetDefault(GPU_CHIP="sm_80", GPU_TARGET="nvvm")
for name in ("a", "b", "c"):
    env.GpuObject(name, name + ".mlir")
env.GpuObject("d", "d.mlir", GPU_LINKLIBS=["lib.bc"])
"""

LIB_LL = """\
target triple = "nvptx64-nvidia-cuda"
define float @scale_by_{value}(float %x) {{
  %r = fmul float %x, {value}.0
  ret float %r
}}
"""


def make_project(path, sconstruct=SCONSTRUCT):
    """a: saxpy (NVVM), b: several kernels (ROCDL), c: target-neutral, d: linked with a bitcode library."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "SConstruct").write_text(sconstruct.format(toolpath=TOOLPATH))
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), path / "a.mlir", "sm_80", 3)
    instantiate(os.path.join(CORPUS, "multi_kernel.rocdl.mlir"), path / "b.mlir", "gfx942", 2)
    shutil.copy(os.path.join(CORPUS, "vecadd.neutral.mlir"), path / "c.mlir")
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), path / "d.mlir", "sm_90", 1)
    (path / "d.mlir").write_text((path / "d.mlir").read_text().replace("@saxpy_nvvm", "@saxpy_linked"))
    write_library(path, 2)
    return path


def write_library(path, value):
    from mlirgpu.llvm import toolchain

    (path / "lib.ll").write_text(LIB_LL.format(value=value))
    subprocess.run([toolchain.llvm_tool("llvm-as"), "lib.ll", "-o", "lib.bc"], check=True, cwd=path)


def scons(path, *args, check=True):
    run = subprocess.run([SCONS, "-Q", *args], cwd=path, capture_output=True, text=True)
    if check:
        assert run.returncode == 0, run.stdout + run.stderr
    return run


def compiled(run):
    """The sources compiled in a run, from the tool's default command display."""
    return sorted(re.findall(r"^mlirgpu compile (\S+)", run.stdout, re.M))


def files(path):
    """All files under `path` (relative), except SCons's own database."""
    found = []
    for folder, _dirs, names in os.walk(path):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), path)
            if not rel.startswith(".sconsign"):
                found.append(rel)
    return sorted(found)


def same_tree(a, b, names):
    """Names whose files differ between trees `a` and `b`. A compile record (mlirgpu.json) is compared without
    each job's `stages`, which says whether a stage ran or came from the stage cache: the only field that
    describes the run rather than what it made."""
    return [name for name in names if not _same_file(os.path.join(a, name), os.path.join(b, name))]


def _same_file(a, b):
    if os.path.basename(a).endswith("mlirgpu.json"):
        return _record_without_origins(a) == _record_without_origins(b)
    return filecmp.cmp(a, b, shallow=False)


def _record_without_origins(path):
    with open(path, encoding="utf-8") as handle:
        record = json.load(handle)
    for job in record.get("jobs", []):
        job.pop("stages", None)
    return record
