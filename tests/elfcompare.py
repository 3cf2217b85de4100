"""Host objects compared with LLVM's: the object LLVM's ELF writer makes of embed.host_ir (llvmlite, in this
process), a comparison section by section, symbol by symbol and relocation by relocation (pyelftools), and random
binaries of every kind of content, for the direct writer's tests (tests/unit/test_elf_writer.py on made-up
binaries, tests/build/test_elf_objects.py on real compiles)."""
from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection
from elftools.elf.sections import SymbolTableSection

from mlirgpu.llvm import ops
from mlirgpu.pipeline import embed
from mlirgpu.targets import nvvm, rocdl


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


NvvmLike, RocdlLike = nvvm.NVVM(), rocdl.ROCDL()  # embedding reads a target's name and its outputs role's vendor section


def random_binaries(rng, count):
    """Binaries of every kind of content: ASCII text ending in NUL (ISA), bytes, zeros; symbols LLVM's string
    table tail-merges (`k_binary` inside `kk_binary`), non-ASCII module names, strings shared between entries."""
    binaries = []
    for index in range(count):
        module = rng.choice([f"m{index}", f"m{index}1x", f"kernels_{index}", f"mod\u00e9{index}"])
        data = rng.choice([b"// ptx text\n.version 8.0\0", rng.randbytes(rng.randrange(1, 300)),
                           bytes(rng.randrange(1, 40))])
        target = rng.choice([NvvmLike, RocdlLike])
        chips = tuple(rng.sample(["sm_80", "sm_90", "gfx90a", "gfx942"], rng.randrange(1, 3)))
        name = rng.choice([f"p_{module.replace(chr(0xe9), 'e')}_{index}", "k" * (index + 1)])  # k_binary in kk_binary
        binaries.append(embed.Embedded(name, module, target, chips,
                                       rng.choice(["isa", "bin", "fatbin", "bundle"]), data))
    return binaries
