"""The direct ELF writer (mlirgpu.pipeline.elfobject) on binaries made up in memory: for random binaries in every
layout and section it says it can write, its object is LLVM's object of embed.host_ir byte for byte (and field
by field); the shapes LLVM gives a meaning of its own it leaves to LLVM. Real compiles and gcc linking the
object: tests/build/test_elf_objects.py."""
import random

import pytest

from elfcompare import NvvmLike, assert_same_object, llvm_object, random_binaries
from mlirgpu.pipeline import elfobject, embed


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
    empty = embed.Embedded("e", "e", NvvmLike, ("sm_90",), "isa", b"")
    assert not elfobject.writes([empty], "plain", "", "k.mlir")
    assert not elfobject.writes(binaries, "plain", "", "")
