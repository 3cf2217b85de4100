"""ROCDL: AMDGCN assembly from LLVM's AMDGPU back end, assembled by llvm-mc and linked to HSACO by ld.lld.

The pre-link step follows upstream MLIR 22.1.8: device libraries (ocml, ockl, hip, opencl) are linked only when
the module calls into them, and the `__oclc_*` control constants and the code object version flag are added.
"""
import os
import re

from .. import toolchain
from ..bundle import make_bundle
from ..errors import CompileError
from .base import COMMON_PARAMETERS, Library, Target, run_tool

_STRIP = ("opencl.ocl.version", "llvm.ident")


# LLVM's `AMDGPU::getIsaVersion` of the generic processors, which have no digits to read.
_GENERIC_ISA = {"gfx9-generic": 9000, "gfx9-4-generic": 9004, "gfx10-1-generic": 10001,
                "gfx10-3-generic": 10003, "gfx11-generic": 11300, "gfx12-generic": 12000}


def isa_version(chip):
    """`__oclc_ISA_version` as upstream computes it: major*1000 + stepping*100 + minor (gfx942 -> 9204)."""
    if chip in _GENERIC_ISA:
        return _GENERIC_ISA[chip]
    match = re.fullmatch(r"gfx(\d+)([0-9a-f])([0-9a-f])", chip)
    if not match:
        raise CompileError(f"cannot read an ISA version from ROCDL chip '{chip}'", fix="use a chip like gfx942")
    major, minor, stepping = int(match.group(1)), int(match.group(2), 16), int(match.group(3), 16)
    return major * 1000 + stepping * 100 + minor


def abi_version(text, default=600):
    """The `abi` parameter as upstream reads it (`StringRef::getAsInteger(0, abi)` into an int preset to 600):
    the radix is sensed (`0x`, `0b`, `0o`, a leading 0 for octal), and anything unreadable keeps the default."""
    body, sign = (text[1:], -1) if text.startswith("-") else (text, 1)
    lowered = body.lower()
    if lowered.startswith("0x"):
        radix, digits = 16, body[2:]
    elif lowered.startswith("0b"):
        radix, digits = 2, body[2:]
    elif body.startswith("0o"):
        radix, digits = 8, body[2:]
    elif len(body) > 1 and body[0] == "0" and body[1].isdigit():
        radix, digits = 8, body[1:]
    else:
        radix, digits = 10, body
    if not digits or not all(ch in "0123456789abcdefghijklmnopqrstuvwxyz"[:radix] for ch in digits.lower()):
        return default
    value = sign * int(digits, radix)
    return value if -2**31 <= value < 2**31 else default


class ROCDL(Target):
    name = "rocdl"
    attribute = "rocdl.target"
    default_triple = "amdgcn-amd-amdhsa"
    default_chip = "gfx900"
    parameters = {**COMMON_PARAMETERS, "features": str, "abi": str}

    def toolkit(self, options, environment=None):
        return toolchain.rocm_toolkit(options.toolkit, environment)

    def conversion_pass(self, chips):
        """Specialised for the first chip; gpu.printf becomes HIP's hostcall printf (runtime=HIP)."""
        return f"convert-gpu-to-rocdl{{chipset={chips[0]} runtime=HIP}}"

    def predicted_libraries(self, attr, symbols, ops, lowered, options, environment=None):
        """The attribute's link files and the device libraries the module's declarations ask for; for code
        that is lowered first, ocml and ockl when it uses math, complex or gpu.printf (the lowering introduces
        such calls)."""
        names = set(self.needed_libraries(symbols))
        if lowered and any(op.split(".")[0] in ("math", "complex") or op == "gpu.printf" for op in ops):
            names.update(("ocml", "ockl"))
        root = self.toolkit(options, environment)
        found = [os.path.join(root, "amdgcn", "bitcode", f"{name}.bc") for name in sorted(names)] if root else []
        return super().predicted_libraries(attr, symbols, ops, lowered, options, environment) + \
            [path for path in found if os.path.isfile(path)]

    def needed_libraries(self, undefined):
        needs = set()
        for name in undefined:
            if name.startswith("__ocml_"):
                needs.add("ocml")
            elif name.startswith("__ockl_"):
                needs.add("ockl")
            elif name == "printf":
                needs.update(("ocml", "ockl", "opencl"))
            elif name == "__atomic_work_item_fence":
                needs.add("hip")
        return [lib for lib in ("ocml", "ockl", "hip", "opencl") if lib in needs]

    def libraries(self, job, worker, options):
        flags = job.attr.flags
        fast = "fast" in flags
        needed = self.needed_libraries(worker.undefined_functions(job))
        constants = []
        if "ocml" in needed:
            constants += [
                ("__oclc_finite_only_opt", 8, int(fast or "finite_only" in flags), 1),
                ("__oclc_daz_opt", 8, int(fast or "daz" in flags), 1),
                ("__oclc_correctly_rounded_sqrt32", 8, int("unsafe_sqrt" not in flags and not fast), 1),
                ("__oclc_unsafe_math_opt", 8, int(fast or "unsafe_math" in flags), 1),
            ]
        if "ocml" in needed or "ockl" in needed:
            wave64 = "wave64" in flags or "no_wave64" not in flags
            constants += [
                ("__oclc_wavefrontsize64", 8, int(wave64), 1),
                ("__oclc_ISA_version", 32, isa_version(job.chip), 4),
                ("__oclc_ABI_version", 32, abi_version(job.attr.abi), 4),
            ]
        worker.add_control_constants(job, constants, [(1, "amdhsa_code_object_version", abi_version(job.attr.abi))])
        user = [Library(path, _STRIP, True) for path in list(options.link_libs) + list(job.attr.link)]
        if not needed:
            return user
        toolkit = self.toolkit(options)
        return user + [Library(toolchain.rocm_library(toolkit, name), _STRIP, True) for name in needed]

    def binary_suffixes(self, fmt):
        return ("hsaco",)  # upstream: ROCDL's fatbin format falls back to bin

    def serialize(self, job, isa, fmt, options, scratch):
        asm_path = os.path.join(scratch, "kernel.s")
        obj_path = os.path.join(scratch, "kernel.o")
        hsaco_path = os.path.join(scratch, "kernel.hsaco")
        with open(asm_path, "w", encoding="utf-8") as handle:
            handle.write(isa)
        argv = [toolchain.llvm_tool("llvm-mc"), f"-triple={job.attr.triple}", f"-mcpu={job.chip}"]
        if job.attr.features:
            argv.append(f"-mattr={job.attr.features}")
        run_tool(argv + ["-filetype=obj", asm_path, "-o", obj_path], "assembling the ISA (llvm-mc)", job,
                 names={asm_path: f"{job.stem}.isa"})
        lld = toolchain.lld(self.toolkit(options))
        run_tool([lld, "-shared", obj_path, "-o", hsaco_path], "linking the HSACO (ld.lld)", job)
        with open(hsaco_path, "rb") as handle:
            return {"hsaco": handle.read()}

    def combine(self, jobs, outputs, options, scratch):
        """One clang offload bundle with every chip's HSACO (HIP's `hipv4-amdgcn-amd-amdhsa--<chip>` entries)."""
        return make_bundle([(job.chip, output.binaries["hsaco"]) for job, output in zip(jobs, outputs)])
