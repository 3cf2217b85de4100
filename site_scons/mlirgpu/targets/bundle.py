"""Clang offload bundles: several AMDGPU code objects in one blob, as HIP embeds them.

Layout (uncompressed, as clang-offload-bundler writes it): magic `__CLANG_OFFLOAD_BUNDLE__`, uint64 entry count,
then per entry {uint64 offset, uint64 size, uint64 id length, id}, then the images. Offsets count from the start
of the bundle; images start on 4096-byte boundaries (HIP's code object alignment). Entry ids are
`hipv4-amdgcn-amd-amdhsa--<chip>`, plus the empty host entry `host-x86_64-unknown-linux-gnu-` that HIP tools
expect first.
"""
import struct

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
HOST_ENTRY = "host-x86_64-unknown-linux-gnu-"
ALIGN = 4096


def entry_id(chip):
    return f"hipv4-amdgcn-amd-amdhsa--{chip}"


def make_bundle(images):
    """Bundle `[(chip, hsaco bytes)]` (in order) into one blob."""
    entries = [(HOST_ENTRY, b"")] + [(entry_id(chip), data) for chip, data in images]
    header_size = len(MAGIC) + 8 + sum(24 + len(name.encode()) for name, _ in entries)
    offsets = []
    position = header_size
    for _name, data in entries:
        if data:
            position = -(-position // ALIGN) * ALIGN
        offsets.append(position)
        position += len(data)
    out = bytearray(MAGIC + struct.pack("<Q", len(entries)))
    for (name, data), offset in zip(entries, offsets):
        encoded = name.encode()
        out += struct.pack("<QQQ", offset, len(data), len(encoded)) + encoded
    for (_name, data), offset in zip(entries, offsets):
        if data:
            out += b"\0" * (offset - len(out)) + data
    return bytes(out)


def read_bundle(blob):
    """[(entry id, bytes)] of a bundle (for tests and tools)."""
    if not blob.startswith(MAGIC):
        raise ValueError("not a clang offload bundle")
    (count,) = struct.unpack_from("<Q", blob, len(MAGIC))
    pos = len(MAGIC) + 8
    entries = []
    for _ in range(count):
        offset, size, id_len = struct.unpack_from("<QQQ", blob, pos)
        pos += 24
        name = blob[pos : pos + id_len].decode()
        pos += id_len
        entries.append((name, blob[offset : offset + size]))
    return entries
