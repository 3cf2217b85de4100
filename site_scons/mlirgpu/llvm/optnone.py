"""Let LLVM's O1-O3 pipeline optimize `optnone` functions, as upstream MLIR's does.

MLIR's `makeOptimizingTransformer` (mlir/lib/ExecutionEngine/OptUtils.cpp) builds its PassBuilder without
PassInstrumentationCallbacks, so without `OptNoneInstrumentation`: every function and loop pass also runs on
functions marked `optnone` (ROCm ockl's `__ockl_hostcall_internal` behind HIP printf, and opencl's `printf`, are
such functions). llvmlite always registers `StandardInstrumentations`, whose OptNoneInstrumentation skips them,
and offers no switch; LLVM's `opt` skips them too. So a worker makes `llvm::OptNoneInstrumentation::shouldRun`
return true in its own copy of libllvmlite.so (x86-64 only; found through the ELF symbol table). The passes'
own checks of the attribute (inliner, FunctionAttrs, Attributor) and code generation are untouched, as upstream's.
Where this cannot be done (another architecture, a stripped library, a system forbidding writable code), the
pipeline runs as llvmlite does, and only modules with `optnone` functions differ from upstream.
"""
import ctypes
import mmap
import os
import platform
import struct

SYMBOL = b"_ZN4llvm22OptNoneInstrumentation9shouldRunENS_9StringRefENS_3AnyE"
_RETURN_TRUE = b"\xb8\x01\x00\x00\x00\xc3"  # x86-64: mov eax, 1; ret


def _symbol_value(path, name):
    """st_value of `name` in the ELF .symtab of `path`, reading only the section headers, the symbol table and
    its strings (19 of libllvmlite.so's 170 MB)."""
    with open(path, "rb") as handle:
        header = handle.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            raise RuntimeError("not a little-endian ELF64 file")
        (shoff,) = struct.unpack_from("<Q", header, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
        handle.seek(shoff)
        table = handle.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
        for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
            if kind != 2:  # SHT_SYMTAB
                continue
            handle.seek(sections[link][4])
            at = handle.read(sections[link][5]).find(b"\0" + name + b"\0")
            if at < 0:
                continue
            handle.seek(offset)
            symbols = handle.read(size)
            key = struct.pack("<I", at + 1)
            hit = symbols.find(key)
            while hit >= 0 and hit % entsize:
                hit = symbols.find(key, hit + 1)
            if hit >= 0:
                return struct.unpack_from("<Q", symbols, hit + 8)[0]
    raise RuntimeError(f"{name.decode()} is not in the symbol table of {path}")


def run_passes_on_optnone_functions(library):
    """Patch this process's copy of `library` (libllvmlite.so, loaded); call before any pass runs (forked
    workers inherit it). Returns None when done, else why not."""
    from .toolchain import file_fact

    if platform.machine() not in ("x86_64", "AMD64"):
        return f"not done on {platform.machine()}"
    path = os.path.realpath(library)
    try:
        offset = int(file_fact(path, "optnone-symbol", lambda: str(_symbol_value(path, SYMBOL))))
        with open("/proc/self/maps", encoding="utf-8") as maps:
            base = next(int(f[0].split("-")[0], 16) for f in (line.split() for line in maps)
                        if len(f) >= 6 and int(f[2], 16) == 0 and os.path.realpath(f[5]) == path)
    except (OSError, RuntimeError, StopIteration, TypeError, ValueError) as exc:
        return f"cannot find the function: {exc}"
    address = base + offset
    if ctypes.string_at(address, len(_RETURN_TRUE)) == _RETURN_TRUE:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = address & ~(mmap.PAGESIZE - 1)
    length = address + len(_RETURN_TRUE) - page
    if libc.mprotect(page, length, mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC) != 0:
        return f"cannot make its code writable: {os.strerror(ctypes.get_errno())}"
    ctypes.memmove(address, _RETURN_TRUE, len(_RETURN_TRUE))
    libc.mprotect(page, length, mmap.PROT_READ | mmap.PROT_EXEC)
    return None
