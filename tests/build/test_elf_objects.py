"""The host object of a file without host code is written directly (mlirgpu.pipeline.elfobject), with no LLVM
IR: the same bytes as LLVM's object of embed.host_ir (llvmlite, an independent writer), compared whole and
section by section, symbol by symbol and relocation by relocation through pyelftools; gcc links it, readelf and
llvm-objdump read it."""
import os
import random
import subprocess

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from corpusutil import CORPUS, instantiate
from mlirgpu import CompileOptions
from mlirgpu.llvm import ops, toolchain
from mlirgpu.pipeline import driver, elfobject, embed
from mlirgpu.pipeline.planning import check_options
from mlirgpu.targets import nvvm, rocdl

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


def llvm_object(binaries, layout, section, source_name):
    return ops.object_from_ir(embed.host_ir(binaries, layout, section, source_name))


def assert_same_object(ours, reference, where):
    """Every section's header and bytes, the symbol table and the relocations, then the whole file."""
    paths = []
    for name, data in (("ours", ours), ("llvm", reference)):
        paths.append(where / f"{name}.o")
        paths[-1].write_bytes(data)
    with open(paths[0], "rb") as mine, open(paths[1], "rb") as theirs:
        ours_elf, llvm_elf = ELFFile(mine), ELFFile(theirs)
        assert ours_elf.header == llvm_elf.header
        assert [s.name for s in ours_elf.iter_sections()] == [s.name for s in llvm_elf.iter_sections()]
        for section, expected in zip(ours_elf.iter_sections(), llvm_elf.iter_sections()):
            assert section.header == expected.header, section.name
            assert section.data() == expected.data(), section.name
            if isinstance(section, SymbolTableSection):
                assert [(s.name, s.entry) for s in section.iter_symbols()] == \
                    [(s.name, s.entry) for s in expected.iter_symbols()]
            if isinstance(section, RelocationSection):
                assert [r.entry for r in section.iter_relocations()] == [r.entry for r in expected.iter_relocations()]
    assert ours == reference
    return paths[0]


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
    result = driver.compile_source(source, options)
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


class _Nvvm:
    name, vendor_section = "nvvm", nvvm.NVVM.vendor_section


class _Rocdl:
    name, vendor_section = "rocdl", rocdl.ROCDL.vendor_section


def random_binaries(rng, count):
    """Binaries of every kind of content: ASCII text ending in NUL (ISA), bytes, zeros; symbols LLVM's string
    table tail-merges (`k_binary` inside `kk_binary`), non-ASCII module names, strings shared between entries."""
    binaries = []
    for index in range(count):
        module = rng.choice([f"m{index}", f"m{index}1x", f"kernels_{index}", f"mod\u00e9{index}"])
        data = rng.choice([b"// ptx text\n.version 8.0\0", rng.randbytes(rng.randrange(1, 300)),
                           bytes(rng.randrange(1, 40))])
        target = rng.choice([_Nvvm, _Rocdl])
        chips = tuple(rng.sample(["sm_80", "sm_90", "gfx90a", "gfx942"], rng.randrange(1, 3)))
        name = rng.choice([f"p_{module.replace(chr(0xe9), 'e')}_{index}", "k" * (index + 1)])  # k_binary in kk_binary
        binaries.append(embed.Embedded(name, module, target, chips,
                                       rng.choice(["isa", "bin", "fatbin", "bundle"]), data))
    return binaries


@pytest.mark.parametrize("seed", range(6))
def test_random_objects_are_llvms(seed, tmp_path):
    rng = random.Random(seed)
    for count in (0, 1, 2, rng.randrange(3, 40)):
        binaries = random_binaries(rng, count)
        for layout, section in (("plain", ""), ("plain", ".rodata"), ("plain", "my_binaries"), ("vendor", ""),
                                ("vendor", "mine")):
            source_name = rng.choice(["k.mlir", "a b.mlir", "\u00fcber.mlir"])
            assert elfobject.writes(binaries, layout, section, source_name)
            ours = elfobject.host_object(binaries, layout, section, source_name)
            assert_same_object(ours, llvm_object(binaries, layout, section, source_name), tmp_path)


def test_shapes_llvm_gives_a_meaning_stay_with_llvm():
    binaries = random_binaries(random.Random(1), 3)
    for section in (".bss", ".note.mine", ".init_array", "__llvm_covmap", embed.REGISTRY_SECTION, "a b"):
        assert not elfobject.writes(binaries, "plain", section, "k.mlir")
    assert not elfobject.writes(binaries + [binaries[0]], "plain", "", "k.mlir")  # one symbol twice
    empty = embed.Embedded("e", "e", _Nvvm, ("sm_90",), "isa", b"")
    assert not elfobject.writes([empty], "plain", "", "k.mlir")
    assert not elfobject.writes(binaries, "plain", "", "")


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
