"""The host object of a real compile of a file without host code is written directly (mlirgpu.pipeline.elfobject),
with no LLVM IR: the same bytes as LLVM's object of embed.host_ir (llvmlite, an independent writer), compared
whole and section by section, symbol by symbol and relocation by relocation through pyelftools; gcc links it,
readelf and llvm-objdump read it (random binaries in memory: tests/unit/test_elf_writer.py)."""
import os
import random
import subprocess

import pytest

from corpusutil import CORPUS, instantiate
from elfcompare import assert_same_object, llvm_object, random_binaries
from mlirgpu import CompileOptions
from mlirgpu.execution import fanout
from mlirgpu.llvm import ops, toolchain
from mlirgpu.pipeline import driver, elfobject, embed
from mlirgpu.pipeline.planning import check_options

VECADD = os.path.join(CORPUS, "vecadd.neutral.mlir")
SHAPES = {  # name: (source, options, needs the CUDA toolkit)
    "nvvm-isa": (VECADD, dict(target="nvvm", chip="sm_90", format="isa"), False),
    "nvvm-bin-two-chips": (VECADD, dict(target="nvvm", chip="sm_80,sm_90", format="bin"), True),
    "nvvm-vendor-fatbin": (VECADD, dict(target="nvvm", chip="sm_80,sm_90", layout="vendor"), True),
    "nvvm-vendor-own-section": (VECADD, dict(target="nvvm", chip="sm_90", layout="vendor", section="mine"), True),
    "rocdl-vendor-bundle": (VECADD, dict(target="rocdl", chip="gfx90a,gfx942", layout="vendor"), False),
    "rocdl-isa-section": (VECADD, dict(target="rocdl", chip="gfx942", format="isa", section="gpu_binaries"), False),
    "xevm-modules": ("multi_module.xevm.mlir", dict(format="bin"), False),  # a template: chip pvc, O2
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_compile_writes_llvms_object_without_llvm(shape, tmp_path, monkeypatch, request):
    source, settings, needs_cuda = SHAPES[shape]
    if needs_cuda:
        settings = dict(settings, toolkit=request.getfixturevalue("cuda_root"))
    if not os.path.isabs(source):
        source = instantiate(os.path.join(CORPUS, source), tmp_path / source, "pvc", 2)
    options = check_options(source, CompileOptions(**settings))
    made = []
    monkeypatch.setenv("MLIRGPU_CACHE", "off")  # the middle runs: no object replayed from a compile entry
    monkeypatch.setattr(ops, "object_from_ir", lambda *args, **kwargs: made.append(args) or b"")
    result = driver.compile_source(source, options, runner=fanout.FORKED)
    assert made == [], "the host object of a file without host code went through LLVM IR"
    monkeypatch.undo()
    reference = llvm_object(result.binaries, options.layout, options.section, os.path.basename(source))
    assert_same_object(result.object_bytes, reference, tmp_path)


def test_host_code_still_goes_through_llvm(tmp_path, monkeypatch):
    made = []
    real = ops.object_from_ir
    monkeypatch.setattr(ops, "object_from_ir", lambda *args, **kwargs: made.append(1) or real(*args, **kwargs))
    source = os.path.join(CORPUS, "launch_host.neutral.mlir")
    driver.compile_source(source, check_options(source, CompileOptions(target="nvvm", chip="sm_90", format="isa")))
    assert made == [1]


MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "k.h"
int main(void) {
  static const unsigned char first[] = {%s};
  const struct mlirgpu_binary *b;
  int count = 0;
  if (%s_size != sizeof first || memcmp(%s, first, sizeof first)) return 1;
  MLIRGPU_EACH_BINARY(b) {
    if (b->size == 0 || strcmp(b->source, "k.mlir")) return 2;
    ++count;
  }
  printf("%%d\n", count);
  return 0;
}
"""


def test_gcc_links_it_and_tools_read_it(tmp_path):
    binaries = random_binaries(random.Random(7), 12)
    for layout in ("plain", "vendor"):
        obj = tmp_path / f"{layout}.o"
        obj.write_bytes(elfobject.host_object(binaries, layout, "", "k.mlir"))
        (tmp_path / "k.h").write_text(embed.header(binaries, layout, "", "k.mlir", "K_H"))
        first = binaries[0]
        (tmp_path / "main.c").write_text(MAIN % (",".join(map(str, first.data)), first.symbol, first.symbol))
        program = tmp_path / f"prog-{layout}"
        subprocess.run(["gcc", f"-I{tmp_path}", str(tmp_path / "main.c"), str(obj), "-o", str(program)], check=True)
        assert subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout == "12\n"
        for tool in (["readelf", "-a", "-W"], [toolchain.llvm_tool("llvm-objdump"), "-h", "-r", "-t"]):
            run = subprocess.run(tool + [str(obj)], capture_output=True, text=True)
            assert run.returncode == 0 and not run.stderr, run.stderr
            assert first.symbol in run.stdout and "mlirgpu_registry" in run.stdout
