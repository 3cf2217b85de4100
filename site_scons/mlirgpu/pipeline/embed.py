"""The host side: LLVM IR for the x86-64 object that carries the GPU binaries, and its C header.

Two layouts:
- plain (default, as upstream): each binary is an external read-only symbol `<prefix><name>_binary`, 8-aligned,
  in `--section` or `.rodata`, with `<prefix><name>_binary_size` (uint64) in `.rodata`.
- vendor: where the vendor's tools look (the target's `vendor_section`: e.g. a fatbin in `.nv_fatbin` with a
  `.nvFatBinSegment` wrapper {magic, 1, ptr, null}). Symbols and sizes are as in the plain layout.
Every object also holds a registry entry per binary in section `mlirgpu_registry`, so a program can enumerate
all embedded binaries (`__start_mlirgpu_registry` .. `__stop_mlirgpu_registry`) without knowing module names.
"""
import os
import re
from dataclasses import dataclass

from ..errors import CompileError
from ..util.mlirtext import hex_escaped, printable

REGISTRY_SECTION = "mlirgpu_registry"


@dataclass(frozen=True)
class Embedded:
    """One binary in the host object."""

    name: str  # C name; symbols are `<name>_binary` and `<name>_binary_size`
    module: str  # gpu.module symbol
    target: object  # the targets.Target that made it
    chips: tuple
    format: str  # isa | bin | fatbin, or the target's name for a fat container (e.g. bundle)
    data: bytes

    @property
    def symbol(self):
        return f"{self.name}_binary"

    @property
    def family(self):
        return self.target.name


class _Strings:
    def __init__(self):
        self.lines = []
        self.names = {}

    def ref(self, text):
        if text not in self.names:
            name = f"@.mlirgpu.str.{len(self.names)}"
            data = text.encode("utf-8", "surrogateescape") + b"\0"
            self.lines.append(f'{name} = private unnamed_addr constant [{len(data)} x i8] c"{hex_escaped(data)}", align 1')
            self.names[text] = name
        return self.names[text]


def _registry(binaries, source_name, section_of):
    strings = _Strings()
    lines = ["%mlirgpu.binary = type { ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64 }"]
    for index, item in enumerate(binaries):
        fields = registry_fields(item, source_name, section_of(item))
        refs = ", ".join(f"ptr {strings.ref(field)}" for field in fields)
        lines.append(
            f"@__mlirgpu_registry.{index} = internal global %mlirgpu.binary {{ {refs}, ptr @{item.symbol}, "
            f'i64 {len(item.data)} }}, section "{REGISTRY_SECTION}", align 8'
        )
    return strings.lines + lines


def registry_fields(item, source_name, section):
    """The strings of one registry entry, in `struct mlirgpu_binary`'s order (its pointers `data` and `size` follow)."""
    return [source_name, item.module, item.family, ",".join(item.chips), item.format, section]


def placement(item, layout, section):
    """Where a binary goes: (section, alignment, the target's VendorSection when the vendor layout wraps it)."""
    vendor = item.target.outputs.vendor_section if layout == "vendor" else None
    return section_for(item, layout, section), vendor.alignment if vendor and not section else 8, vendor


def section_for(item, layout, section):
    if section:
        return section
    if layout == "vendor":
        return item.target.outputs.vendor_section.section
    return ".rodata"


def host_ir(binaries, layout, section, source_name, triple="x86_64-unknown-linux-gnu"):
    """LLVM IR text of a host object holding `binaries` (plain or vendor layout) and their registry."""
    lines = ['source_filename = "mlirgpu"', f'target triple = "{triple}"']
    for index, item in enumerate(binaries):
        chosen, align, vendor = placement(item, layout, section)
        attribute = f', section "{chosen}"' if chosen != ".rodata" else ""
        lines.append(f'@{item.symbol} = constant [{len(item.data)} x i8] c"{_ir_string(item.data)}"{attribute}, '
                     f"align {align}")
        lines.append(f"@{item.symbol}_size = constant i64 {len(item.data)}, align 8")
        if vendor:
            lines.append(
                f"@__mlirgpu_wrapper.{index} = internal constant {{ i32, i32, ptr, ptr }} {{ i32 {vendor.magic}, "
                f'i32 1, ptr @{item.symbol}, ptr null }}, section "{vendor.wrapper}", align 8'
            )
    lines += _registry(binaries, source_name, lambda item: section_for(item, layout, section))
    return "\n".join(lines) + "\n"


def _ir_string(data):
    """Bytes as the inside of an LLVM IR `c"..."` string. ASCII text (ISA, with the NULs ending it) is written
    as it is, less `\\` and `"`: a third of `hex_escaped`'s size, which for a file of 10,000 modules is 40 MB of
    IR text less, twice (the text, and its UTF-8 for LLVM's parser); the constant LLVM reads is the same."""
    text = data.rstrip(b"\0")
    if not text.isascii() or b"\0" in text:
        return hex_escaped(data)
    return text.decode("ascii").replace("\\", "\\5C").replace('"', "\\22") + "\\00" * (len(data) - len(text))


def llvm_global(name):
    """How LLVM IR text writes the global `name`: bare when it can be, else quoted with `\\XX` escapes (as
    LLVM's printer does)."""
    if re.fullmatch(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*", name):
        return "@" + name
    escaped = "".join(f"\\{byte:02X}" if byte < 0x20 or byte >= 0x7F or byte in b'"\\' else chr(byte)
                      for byte in name.encode("utf-8"))
    return f'@"{escaped}"'


def host_ir_with_glue(translated, binaries, source_name):
    """Upstream's host LLVM IR (launch glue) plus what our objects always offer: the binaries as external
    symbols with sizes, and the registry. MLIR names a module's binary `<module>_binary` (any characters, as
    the module's symbol may hold); it becomes the C name of the binary (with the symbol prefix), renamed at
    its definition and every use."""
    text = translated
    extra = []
    for item in binaries:
        glue = llvm_global(f"{item.module}_binary")
        ours = f"@{item.symbol}"
        if glue != ours and re.search(re.escape(ours) + r"(?![-a-zA-Z$._0-9])", text):
            raise CompileError(f"the host code already defines {ours}, the name of module @{item.module}'s binary",
                               fix="rename the function or the module, or set a symbol prefix")
        pattern = re.escape(glue) + (r"(?![-a-zA-Z$._0-9])" if not glue.endswith('"') else "")
        text, count = re.subn("^" + pattern + " = internal constant ", f"{ours} = constant ", text, flags=re.M)
        if count != 1:
            raise CompileError(f"MLIR's launch glue has no {glue} for module @{item.module}",
                               fix="please report this with the source file")
        text = re.sub(pattern, ours, text)
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
  const char *target;   /* the target's name, as --target / GPU_TARGET spell it */
  const char *chips;    /* comma-separated */
  const char *format;   /* "isa", "bin", "fatbin", or the target's fat container (e.g. "bundle") */
  const char *section;  /* ELF section holding the bytes */
  const unsigned char *data;
  uint64_t size;
};
/* Every binary of this ELF module: the program, or the shared library this file is compiled into (GNU ld and
 * lld define these bounds per linked file; each shared library has its own registry: enumerate a library's
 * binaries with a function compiled into it). */
extern const struct mlirgpu_binary __start_mlirgpu_registry[] __attribute__((weak));
extern const struct mlirgpu_binary __stop_mlirgpu_registry[] __attribute__((weak));
/* In any C dialect (C89 too), with `const struct mlirgpu_binary *b;` declared by the caller: */
#define MLIRGPU_EACH_BINARY(b) for ((b) = __start_mlirgpu_registry; (b) < __stop_mlirgpu_registry; ++(b))
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
/* C99 and C++: the loop declares `b`. */
#define MLIRGPU_FOREACH_BINARY(b) \\
  for (const struct mlirgpu_binary *b = __start_mlirgpu_registry; b < __stop_mlirgpu_registry; ++b)
#else
#define MLIRGPU_FOREACH_BINARY(b) MLIRGPU_EACH_BINARY(b) /* C89: declare `b` first */
#endif
/* In one C file of a shared library: `MLIRGPU_DEFINE_REGISTRY(mylib_binaries)` defines
 * `const struct mlirgpu_binary *mylib_binaries(uint64_t *count)`, the library's binaries for its users. */
#define MLIRGPU_DEFINE_REGISTRY(function) \\
  const struct mlirgpu_binary *function(uint64_t *count) { \\
    *count = (uint64_t)(__stop_mlirgpu_registry - __start_mlirgpu_registry); \\
    return __start_mlirgpu_registry; \\
  }
#endif
"""


def comment_text(text):
    """`text` safe inside a C comment: printable ASCII, `*/` broken up, anything else as `\\xNN` (or \\u)."""
    return printable(text).replace("*/", "*\\/").replace("/*", "/\\*")


def header_guard(header_path):
    """An include guard unique to the header's path (two `kernels.h` in different folders, `a-b.h` beside
    `a_b.h`), the same in every checkout (the path is taken relative to where the compile runs)."""
    import hashlib

    relative = os.path.relpath(os.path.abspath(header_path)).replace(os.sep, "/")
    stem = re.sub(r"\W", "_", os.path.basename(header_path)).upper()
    return f"MLIRGPU_{stem}_{hashlib.sha256(relative.encode('utf-8', 'surrogateescape')).hexdigest()[:8].upper()}"


def header(binaries, layout, section, source_name, guard):
    """A C header declaring the symbols of one object and describing each binary."""
    lines = [f"/* Generated by mlirgpu from {comment_text(source_name)}: the GPU binaries of this object. */",
             f"#ifndef {guard}", f"#define {guard}", HEADER_PREAMBLE]
    for item in binaries:
        upper = item.name.upper()
        lines += [
            f"/* gpu.module @{comment_text(item.module)}: {item.family} {','.join(item.chips)}, format {item.format}, "
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
