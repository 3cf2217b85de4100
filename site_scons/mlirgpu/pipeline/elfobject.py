"""The host object of a file without host code, written directly: an x86-64 ELF relocatable object holding the
binaries (plain or vendor layout, mlirgpu.pipeline.embed) and their registry, with no LLVM IR in between.

It is byte for byte the object LLVM's ELF writer makes of `embed.host_ir` for the same binaries (llvmlite's
`object_from_ir`, which stays the path for host code and the reference the tests compare with): the same
sections in the same order (`.strtab` first, `.text`, each data section where its first global puts it, its
`.rela` section after it, `.note.GNU-stack`, `.symtab`), the same file layout (section data, then the symbol
table, the relocations and the string table, whose names are tail-merged and ordered as LLVM's
StringTableBuilder orders them), the same symbols (the `mlirgpu` file symbol, the local wrappers, registry
entries and the section symbol the registry's strings are reached through, then the global binaries and
sizes, in definition order) and relocations (`R_X86_64_64`, in offset order). Why: the IR holds every binary
as text, and LLVM parses it into a module and writes the object again; for 10,000 ISA binaries (37 MiB) that
was 207 MiB of peak memory and 0.8 s of CPU, against 70 MiB and 0.3 s here (bench/README.md).

`writes` says where this reproduces LLVM's object exactly; elsewhere (a section name LLVM gives a meaning, such
as `.bss` or `.note.*`; an empty binary; a registry string that is empty or holds a NUL; two binaries of one
symbol) the host object is still made through LLVM IR.

Its records are compact (issue 40: peak memory that does not grow with the number of modules): a section's
small data (sizes, registry entries, wrappers, strings, padding) is one growing buffer, not an object per
piece, its relocations are three columns, and the symbol and relocation tables are packed into one buffer each.
Per binary that was about 3 KB of short-lived objects (31 MiB at 10,000 modules), whose memory the compile's
process kept while it answered its caller.
"""
import re
import struct
from array import array

from . import embed

_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION_HEADER = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_RELOCATION = struct.Struct("<QQq")
_IDENT = b"\x7fELF\x02\x01\x01" + bytes(9)  # 64-bit, little-endian, version 1, System V ABI
_ET_REL, _EM_X86_64, _R_X86_64_64 = 1, 62, 1
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA = 1, 2, 3, 4
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR, _SHF_MERGE, _SHF_STRINGS, _SHF_INFO_LINK = 1, 2, 4, 0x10, 0x20, 0x40
_STB_LOCAL, _STB_GLOBAL = 0, 1
_STT_OBJECT, _STT_SECTION, _STT_FILE = 1, 3, 4
_SHN_ABS = 0xFFF1
_STRINGS = ".rodata.str1.1"  # LLVM's section for the registry's `private unnamed_addr` C strings
_ENTRY = struct.Struct("<56xQ")  # struct mlirgpu_binary: seven pointers (relocations), then the size
_WRAPPER = struct.Struct("<II16x")  # {magic, version 1, pointer to the binary (a relocation), null}
_PLAIN_SECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a name LLVM takes as it is (no `.bss`, `.note`, ...)
_SMALL = 64  # data of at most this many bytes is copied into the section's buffer (a binary is kept as given)


def writes(binaries, layout, section, source_name):
    """Whether this module writes the host object of `binaries` exactly as LLVM would (else: embed.host_ir)."""
    if section not in (None, "", ".rodata") and (not _PLAIN_SECTION.fullmatch(section) or section.startswith("__llvm")
                                                or section == embed.REGISTRY_SECTION):
        return False
    symbols = [item.symbol for item in binaries]
    if len(set(symbols)) != len(symbols) or any(not item.data for item in binaries):
        return False
    return all(field and "\0" not in field for item in binaries
               for field in embed.registry_fields(item, source_name, embed.section_for(item, layout, section)))


def host_object(binaries, layout, section, source_name):
    """The ELF object of `binaries` and their registry (see `writes` for where it is LLVM's)."""
    return b"".join(host_object_parts(binaries, layout, section, source_name))


def host_object_parts(binaries, layout, section, source_name):
    """The ELF object of `binaries` as its parts in file order: bytes, and each binary's data as it is given
    (bytes, or a spool.Spooled range the object is copied from as it is written), never joined here."""
    elf = _Object()
    placed = []
    for index, item in enumerate(binaries):
        chosen, align, vendor = embed.placement(item, layout, section)
        binary = elf.define(item.symbol, elf.section(chosen), item.data, align)
        elf.define(f"{item.symbol}_size", elf.section(".rodata"), struct.pack("<Q", len(item.data)), 8)
        if vendor:
            wrappers = elf.section(vendor.wrapper, _SHF_ALLOC | _SHF_WRITE)
            wrapper = elf.define(f"__mlirgpu_wrapper.{index}", wrappers, _WRAPPER.pack(vendor.magic, 1), 8, local=True)
            wrappers.relocations.add(wrapper.value + 8, binary, 0)
        placed.append(binary)
    strings, offsets = None, {}
    for item in binaries:
        for field in embed.registry_fields(item, source_name, embed.section_for(item, layout, section)):
            if field not in offsets:
                if strings is None:
                    strings = elf.section(_STRINGS, _SHF_ALLOC | _SHF_MERGE | _SHF_STRINGS, entsize=1)
                    strings.symbol = elf.symbol("", _STT_SECTION, strings, 0, 0, local=True)
                offsets[field] = strings.place(field.encode("utf-8", "surrogateescape") + b"\0", 1)
    for index, (item, binary) in enumerate(zip(binaries, placed)):
        registry = elf.section(embed.REGISTRY_SECTION, _SHF_ALLOC | _SHF_WRITE)
        entry = elf.define(f"__mlirgpu_registry.{index}", registry, _ENTRY.pack(len(item.data)), 8, local=True)
        fields = embed.registry_fields(item, source_name, embed.section_for(item, layout, section))
        for i, field in enumerate(fields):
            registry.relocations.add(entry.value + 8 * i, strings.symbol, offsets[field])
        registry.relocations.add(entry.value + 48, binary, 0)
    return elf.written()


class _Section:
    __slots__ = ("name", "kind", "flags", "align", "entsize", "parts", "size", "relocations", "link", "info",
                 "offset", "index", "symbol", "target", "buffer")

    def __init__(self, name, kind, flags, align=1, entsize=0):
        self.name, self.kind, self.flags, self.align, self.entsize = name, kind, flags, align, entsize
        self.parts, self.size, self.relocations = [], 0, _Relocations()
        self.buffer = None  # the section's own buffer of small data, while it ends the parts
        self.link = self.info = self.offset = self.index = 0
        self.symbol = self.target = None  # target: the section a `.rela` section relocates

    def place(self, data, align):
        """Append `data` at the next offset aligned to `align` (zeros between, as LLVM pads data); its offset.
        Padding and small data join the buffer that ends the parts (one is started when the last part is a
        binary); a binary (bytes, or a spooled range) is a part of its own, never copied."""
        self.align = max(self.align, align)
        padding = -self.size % align
        small = isinstance(data, (bytes, bytearray)) and len(data) <= _SMALL
        if padding or small:
            if not (self.parts and self.parts[-1] is self.buffer):
                self.buffer = bytearray()
                self.parts.append(self.buffer)
            self.buffer += bytes(padding)
        offset = self.size + padding
        if small:
            self.buffer += data
        else:
            self.parts.append(data)
        self.size = offset + len(data)
        return offset


class _Relocations:
    """A section's relocations in three columns: offsets, symbols, addends."""
    __slots__ = ("offsets", "symbols", "addends")

    def __init__(self):
        self.offsets, self.symbols, self.addends = array("Q"), [], array("q")

    def add(self, offset, symbol, addend):
        self.offsets.append(offset)
        self.symbols.append(symbol)
        self.addends.append(addend)

    def __len__(self):
        return len(self.symbols)

    def packed(self):
        """The `.rela` section's bytes (R_X86_64_64 entries, in the order added)."""
        table = bytearray()
        for offset, symbol, addend in zip(self.offsets, self.symbols, self.addends):
            table += _RELOCATION.pack(offset, symbol.index << 32 | _R_X86_64_64, addend)
        return table


class _Symbol:
    __slots__ = ("name", "kind", "section", "value", "size", "local", "index")

    def __init__(self, name, kind, section, value, size, local):
        self.name, self.kind, self.section, self.value, self.size, self.local = name, kind, section, value, size, local
        self.index = 0


class _Object:
    """Sections and symbols in the order LLVM creates them, and the file LLVM's ELF writer makes of them."""

    def __init__(self):
        self.sections = {}
        self.section(".text", _SHF_ALLOC | _SHF_EXECINSTR, align=4)
        self.symbols = [_Symbol("mlirgpu", _STT_FILE, None, 0, 0, True)]  # from `source_filename`

    def section(self, name, flags=_SHF_ALLOC, align=1, entsize=0):
        if name not in self.sections:
            self.sections[name] = _Section(name, _SHT_PROGBITS, flags, align, entsize)
        return self.sections[name]

    def symbol(self, name, kind, section, value, size, local):
        self.symbols.append(_Symbol(name, kind, section, value, size, local))
        return self.symbols[-1]

    def define(self, name, section, data, align, local=False):
        return self.symbol(name, _STT_OBJECT, section, section.place(data, align), len(data), local)

    def written(self):
        """The object file's parts, in file order."""
        self.section(".note.GNU-stack", 0)
        contents = list(self.sections.values())
        relocated = [self._relocation_section(section) for section in contents if section.relocations]
        strtab = _Section(".strtab", _SHT_STRTAB, 0)
        symtab = _Section(".symtab", _SHT_SYMTAB, 0, align=8, entsize=_SYMBOL.size)
        table = [strtab]
        for section in contents:
            table.append(section)
            table += [rela for rela in relocated if rela.target is section]
        table.append(symtab)
        for index, section in enumerate(table, start=1):
            section.index = index
        symbols = [symbol for symbol in self.symbols if symbol.local] + [s for s in self.symbols if not s.local]
        for index, symbol in enumerate(symbols, start=1):
            symbol.index = index
        names = _string_table([s.name for s in table] + [s.name for s in symbols if s.kind != _STT_SECTION])
        strtab.parts, strtab.size = [names[0]], len(names[0])
        symtab.link, symtab.info = strtab.index, 1 + sum(symbol.local for symbol in symbols)
        entries = bytearray(_SYMBOL.size)
        for symbol in symbols:
            entries += _symbol_entry(symbol, names[1])
        symtab.parts = [entries]
        for rela in relocated:
            rela.link, rela.info = symtab.index, rela.target.index
            rela.parts = [rela.target.relocations.packed()]
        symtab.size = len(symtab.parts[0])
        parts, end = [], _HEADER.size
        for section in contents + [symtab] + relocated + [strtab]:  # the order LLVM writes them in
            padding = -end % section.align
            parts += [bytes(padding)] + section.parts
            section.offset = end + padding
            end = section.offset + section.size
        padding = -end % 8
        headers = [bytes(_SECTION_HEADER.size)] + [_SECTION_HEADER.pack(
            names[1][s.name], s.kind, s.flags, 0, s.offset, s.size, s.link, s.info, s.align, s.entsize) for s in table]
        header = _HEADER.pack(_IDENT, _ET_REL, _EM_X86_64, 1, 0, 0, end + padding, 0, _HEADER.size, 0, 0,
                              _SECTION_HEADER.size, len(headers), strtab.index)
        return [header] + parts + [bytes(padding)] + headers

    def _relocation_section(self, section):
        rela = _Section(".rela" + section.name, _SHT_RELA, _SHF_INFO_LINK, align=8, entsize=_RELOCATION.size)
        rela.target = section
        rela.size = len(section.relocations) * _RELOCATION.size
        return rela


def _symbol_entry(symbol, offsets):
    binding = _STB_LOCAL if symbol.local else _STB_GLOBAL
    index = _SHN_ABS if symbol.section is None else symbol.section.index
    name = 0 if symbol.kind == _STT_SECTION else offsets[symbol.name]
    return _SYMBOL.pack(name, binding << 4 | symbol.kind, 0, index, symbol.value, symbol.size)


def _string_table(names):
    """(the table's bytes, {name: offset}) as LLVM's StringTableBuilder (ELF, optimized) makes it: the names
    sorted by their reversed bytes, descending, each one the tail of the one before it sharing its bytes."""
    table, offsets, previous = bytearray(b"\0"), {}, b""
    for name in sorted(set(names), key=lambda text: text.encode("utf-8", "surrogateescape")[::-1], reverse=True):
        raw = name.encode("utf-8", "surrogateescape")
        if previous.endswith(raw):
            offsets[name] = len(table) - len(raw) - 1
            continue
        offsets[name] = len(table)
        table += raw + b"\0"
        previous = raw
    return bytes(table), offsets
