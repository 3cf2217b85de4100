"""The host side: LLVM IR for the x86-64 object that carries the GPU binaries, and its C header.

Two layouts:
- plain (default, as upstream): each binary is an external read-only symbol `<prefix><name>_binary`, 8-aligned,
  in `--section` or `.rodata`, with `<prefix><name>_binary_size` (uint64) in `.rodata`.
- vendor: where NVIDIA's and AMD's tools look: an NVVM fatbin in `.nv_fatbin` with its `.nvFatBinSegment`
  wrapper {0x466243B1, 1, ptr, null}; a ROCDL offload bundle in `.hip_fatbin` (4096-aligned) with its
  `.hipFatBinSegment` wrapper {0x48495046, 1, ptr, null}. Symbols and sizes are as in the plain layout.
Every object also holds a registry entry per binary in section `mlirgpu_registry`, so a program can enumerate
all embedded binaries (`__start_mlirgpu_registry` .. `__stop_mlirgpu_registry`) without knowing module names.
"""
import re
from dataclasses import dataclass

REGISTRY_SECTION = "mlirgpu_registry"
VENDOR = {
    "nvvm": (".nv_fatbin", ".nvFatBinSegment", 0x466243B1, 8),
    "rocdl": (".hip_fatbin", ".hipFatBinSegment", 0x48495046, 4096),
}


@dataclass(frozen=True)
class Embedded:
    """One binary in the host object."""

    name: str  # C name; symbols are `<name>_binary` and `<name>_binary_size`
    module: str  # gpu.module symbol
    family: str  # nvvm | rocdl
    chips: tuple
    format: str  # isa | bin | fatbin | bundle
    data: bytes

    @property
    def symbol(self):
        return f"{self.name}_binary"


def _ir_bytes(data):
    """Bytes as the inside of an LLVM IR `c"..."` string: every byte as a `\\XX` escape (fast, and exact)."""
    return "\\" + data.hex("\\") if data else ""


class _Strings:
    def __init__(self):
        self.lines = []
        self.names = {}

    def ref(self, text):
        if text not in self.names:
            name = f"@.mlirgpu.str.{len(self.names)}"
            data = text.encode("utf-8") + b"\0"
            self.lines.append(f'{name} = private unnamed_addr constant [{len(data)} x i8] c"{_ir_bytes(data)}", align 1')
            self.names[text] = name
        return self.names[text]


def _registry(binaries, source_name, section_of):
    strings = _Strings()
    lines = ["%mlirgpu.binary = type { ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64 }"]
    for index, item in enumerate(binaries):
        fields = [source_name, item.module, item.family, ",".join(item.chips), item.format, section_of(item)]
        refs = ", ".join(f"ptr {strings.ref(field)}" for field in fields)
        lines.append(
            f"@__mlirgpu_registry.{index} = internal global %mlirgpu.binary {{ {refs}, ptr @{item.symbol}, "
            f'i64 {len(item.data)} }}, section "{REGISTRY_SECTION}", align 8'
        )
    return strings.lines + lines


def section_for(item, layout, section):
    if section:
        return section
    if layout == "vendor":
        return VENDOR[item.family][0]
    return ".rodata"


def host_ir(binaries, layout, section, source_name, triple="x86_64-unknown-linux-gnu"):
    """LLVM IR text of a host object holding `binaries` (plain or vendor layout) and their registry."""
    lines = ['source_filename = "mlirgpu"', f'target triple = "{triple}"']
    for index, item in enumerate(binaries):
        chosen = section_for(item, layout, section)
        align = VENDOR[item.family][3] if layout == "vendor" and not section else 8
        placement = f', section "{chosen}"' if chosen != ".rodata" else ""
        lines.append(f'@{item.symbol} = constant [{len(item.data)} x i8] c"{_ir_bytes(item.data)}"{placement}, align {align}')
        lines.append(f"@{item.symbol}_size = constant i64 {len(item.data)}, align 8")
        if layout == "vendor":
            _sec, wrapper_section, magic, _align = VENDOR[item.family]
            lines.append(
                f"@__mlirgpu_wrapper.{index} = internal constant {{ i32, i32, ptr, ptr }} {{ i32 {magic}, i32 1, "
                f'ptr @{item.symbol}, ptr null }}, section "{wrapper_section}", align 8'
            )
    lines += _registry(binaries, source_name, lambda item: section_for(item, layout, section))
    return "\n".join(lines) + "\n"


def host_ir_with_glue(translated, binaries, source_name):
    """Upstream's host LLVM IR (launch glue) plus what our objects always offer: the binaries as external
    symbols with sizes, and the registry."""
    text = translated
    extra = []
    for item in binaries:
        text, count = re.subn(rf"^@{re.escape(item.symbol)} = internal constant ", f"@{item.symbol} = constant ",
                              text, flags=re.M)
        if count != 1:
            raise ValueError(f"host IR has no @{item.symbol}")
        extra.append(f"@{item.symbol}_size = constant i64 {len(item.data)}, align 8")

    def section_of(item):
        match = re.search(rf'^@{re.escape(item.symbol)} = .*, section "([^"]+)"', text, re.M)
        return match.group(1) if match else ".rodata"

    extra += _registry(binaries, source_name, section_of)
    return text + "\n" + "\n".join(extra) + "\n"


HEADER_PREAMBLE = """\
#include <stdint.h>

#ifndef MLIRGPU_REGISTRY_DEFINED
#define MLIRGPU_REGISTRY_DEFINED
/* One embedded GPU binary, as listed in the `mlirgpu_registry` section of every object mlirgpu makes. */
struct mlirgpu_binary {
  const char *source;   /* the .mlir file it came from (base name) */
  const char *module;   /* gpu.module symbol */
  const char *target;   /* "nvvm" or "rocdl" */
  const char *chips;    /* comma-separated */
  const char *format;   /* "isa", "bin", "fatbin" or "bundle" (clang offload bundle) */
  const char *section;  /* ELF section holding the bytes */
  const unsigned char *data;
  uint64_t size;
};
/* Every binary of the program (GNU ld and lld define these bounds). */
extern const struct mlirgpu_binary __start_mlirgpu_registry[] __attribute__((weak));
extern const struct mlirgpu_binary __stop_mlirgpu_registry[] __attribute__((weak));
#define MLIRGPU_FOREACH_BINARY(b) \\
  for (const struct mlirgpu_binary *b = __start_mlirgpu_registry; b < __stop_mlirgpu_registry; ++b)
#endif
"""


def header(binaries, layout, section, source_name, guard):
    """A C header declaring the symbols of one object and describing each binary."""
    lines = [f"/* Generated by mlirgpu from {source_name}: the GPU binaries of this object. */",
             f"#ifndef {guard}", f"#define {guard}", HEADER_PREAMBLE]
    for item in binaries:
        upper = item.name.upper()
        lines += [
            f"/* gpu.module @{item.module}: {item.family} {','.join(item.chips)}, format {item.format}, "
            f"section {section_for(item, layout, section)} */",
            f"extern const unsigned char {item.symbol}[];",
            f"extern const uint64_t {item.symbol}_size;",
            f'#define {upper}_TARGET "{item.family}"',
            f'#define {upper}_CHIPS "{",".join(item.chips)}"',
            f'#define {upper}_FORMAT "{item.format}"',
            f'#define {upper}_SECTION "{section_for(item, layout, section)}"',
            "",
        ]
    lines.append(f"#endif /* {guard} */")
    return "\n".join(lines) + "\n"
