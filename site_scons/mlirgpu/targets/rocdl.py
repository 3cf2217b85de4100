"""ROCDL: AMDGCN assembly from LLVM's AMDGPU back end, assembled by llvm-mc and linked to HSACO by ld.lld; several
chips in one clang offload bundle; kernel resources from the `.amdhsa_*` directives and code object metadata.

The pre-link step follows upstream MLIR 22.1.8: device libraries (ocml, ockl, hip, opencl) are linked only when
the module calls into them, and the `__oclc_*` control constants and the code object version flag are added.
"""
import os
import re

from ..llvm import toolchain
from . import rocm
from ..errors import CompileError
from .bundle import make_bundle
from .base import Target
from .roles import COMMON_PARAMETERS, Checks, Codegen, Library, Lowering, Outputs, Toolchain, VendorSection, existing

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


class ROCDLChecks(Checks):
    """ROCDL's attribute: features and the code object ABI."""

    parameters = {**COMMON_PARAMETERS, "features": str, "abi": str}


class ROCDLLowering(Lowering):
    """convert-gpu-to-rocdl for the first chip."""

    attach_pass = "rocdl-attach-target"

    def conversion_pass(self, chips):
        """Specialised for the first chip; gpu.printf becomes HIP's hostcall printf (runtime=HIP)."""
        return f"convert-gpu-to-rocdl{{chipset={chips[0]} runtime=HIP}}"


class ROCDLCodegen(Codegen):
    """The control constants before linking, the device libraries the module asks for, llvm-mc and ld.lld."""

    kernel_convention = "amdgpu_kernel"

    def predicted_libraries(self, attr, symbols, ops, lowered, options, environment=None):
        """The attribute's link files and the device libraries the module's declarations ask for; for code
        that is lowered first, ocml and ockl when it uses math, complex or gpu.printf (the lowering introduces
        such calls)."""
        names = set(self.needed_libraries(symbols))
        if lowered and any(op.split(".")[0] in ("math", "complex") or op == "gpu.printf" for op in ops):
            names.update(("ocml", "ockl"))
        root = self.target.toolchain.toolkit(options, environment)
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

    def handle_module_pre_link(self, job, module):
        """Upstream's control constants (`__oclc_*`, for the libraries the module needs) and the code object
        version module flag."""
        from ..llvm.ops import add_control_constants, declared_functions

        flags = job.attr.flags
        fast = "fast" in flags
        needed = self.needed_libraries(declared_functions(module))
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
        add_control_constants(module, constants, [(1, "amdhsa_code_object_version", abi_version(job.attr.abi))])

    def load_bitcode_files(self, job, module, options):
        """-l files and the attribute's link=[...] (cleaned and retargeted), then the device libraries the
        module's external declarations ask for, in upstream's order (ocml, ockl, hip, opencl)."""
        from ..llvm.ops import declared_functions

        user = [Library(path, _STRIP, True) for path in self.user_libraries(job.attr, options.link_libs)]
        needed = self.needed_libraries(declared_functions(module))
        if not needed:
            return user
        toolkit = self.target.toolchain.toolkit(options)
        return user + [Library(rocm.rocm_library(toolkit, name), _STRIP, True) for name in needed]

    def provided_elsewhere(self, name):
        """The device libraries' own names (`__ocml_*`, `__ockl_*`, `__oclc_*`: a module that needs one and has
        no ROCm toolkit is told so by `libraries`)."""
        return name.startswith(("__ocml_", "__ockl_", "__oclc_"))

    def library_inputs(self, job, options):
        """The -l and link=[...] files and the device libraries the toolkit has (none without one)."""
        root = self.target.toolchain.toolkit(options)
        own = [os.path.join(root, "amdgcn", "bitcode", f"{name}.bc")
               for name in ("ocml", "ockl", "hip", "opencl")] if root else []
        return super().library_inputs(job, options) + existing(own)

    def binary_commands(self, job, options, folder):
        """llvm-mc assembles the ISA dump, ld.lld links the HSACO: on files named as the dumps in `folder` (the
        object between them, `<stem>.o`, is no dump)."""
        name = lambda suffix: os.path.join(folder, f"{options.dump_prefix}{job.stem}.{suffix}")  # noqa: E731
        argv = [toolchain.llvm_tool("llvm-mc"), f"-triple={job.attr.triple}", f"-mcpu={job.chip}"]
        if job.attr.features:
            argv.append(f"-mattr={job.attr.features}")
        return [(argv + ["-filetype=obj", name("isa"), "-o", name("o")], "assembling the ISA (llvm-mc)", None),
                ([rocm.lld(self.target.toolchain.toolkit(options)), "-shared", name("o"), "-o", name("hsaco")],
                 "linking the HSACO (ld.lld)", None)]


class ROCDLOutputs(Outputs):
    """HSACO, a clang offload bundle for several chips, HIP's fat binary section, .amdhsa resources."""

    vendor_section = VendorSection(".hip_fatbin", ".hipFatBinSegment", 0x48495046, 4096, "roc-obj-ls")
    embeds_fat_as = "bundle"

    def assembly_chip(self, text):
        match = re.search(r'^\s*\.amdgcn_target\s+"[^"]*--([\w.]+)', text, re.M)
        return match.group(1) if match else None

    def binary_suffixes(self, fmt):
        return ("hsaco",)  # upstream: ROCDL's fatbin format falls back to bin

    def embedded_format(self, fmt):
        return "bin" if fmt == "fatbin" else fmt

    def fat_container(self, count, options):
        """With format fatbin, several chips or the vendor layout: one clang offload bundle (`.hipfb`)."""
        return "hipfb" if options.format == "fatbin" and (count > 1 or options.layout == "vendor") else None

    def combine(self, jobs, binaries, assemblies, options, scratch):
        """One clang offload bundle with every chip's HSACO (HIP's `hipv4-amdgcn-amd-amdhsa--<chip>` entries)."""
        return make_bundle([(job.chip, binary["hsaco"]) for job, binary in zip(jobs, binaries)])

    def kernel_resources(self, job, isa_path, options, toolkit):
        """From the `.amdhsa_*` directives and the code object metadata of the ISA dump."""
        with open(isa_path, encoding="utf-8") as handle:
            return amdhsa_kernels(handle.read(), job["chip"])


class ROCDLToolchain(Toolchain):
    """The ROCm device libraries and ld.lld."""

    runs = ("llvm-mc", "ld.lld")

    def toolkit(self, options, environment=None):
        return rocm.rocm_toolkit(options.toolkit, environment)

    def device_libraries(self, options):
        root = self.toolkit(options)
        bitcode = os.path.join(root, "amdgcn", "bitcode") if root else ""
        return [os.path.join(bitcode, name) for name in sorted(os.listdir(bitcode)) if name.endswith(".bc")] \
            if bitcode and os.path.isdir(bitcode) else []

    def owns_toolkit(self, path):
        return os.path.isdir(os.path.join(path, "amdgcn", "bitcode"))

    def tools(self, options, environment=None):
        return toolchain.found(lambda: toolchain.llvm_tool("llvm-mc", environment),
                               lambda: rocm.lld(self.toolkit(options, environment), environment))


class ROCDL(Target):
    """AMD GPUs through MLIR's ROCDL target."""

    name = "rocdl"
    attribute = "rocdl.target"
    default_triple = "amdgcn-amd-amdhsa"
    default_chip = "gfx900"
    Checks, Lowering, Codegen = ROCDLChecks, ROCDLLowering, ROCDLCodegen
    Outputs, Toolchain = ROCDLOutputs, ROCDLToolchain


def _directives(block):
    return {key: int(value) for key, value in re.findall(r"^\s*\.amdhsa_(\w+)\s+(-?\d+)\s*$", block, re.M)}


def _metadata(isa):
    """The `amdhsa.kernels` list of the code object metadata, as {name: {key: value}} (scalar keys only)."""
    start = isa.find("amdhsa.kernels:")
    if start < 0:
        return {}
    kernels = {}
    current = None
    for line in isa[start:].splitlines()[1:]:
        if line.startswith("amdhsa.") or line.startswith(".end_amdgpu_metadata"):
            break
        entry = re.match(r"^  (- )?\s*\.(\w+):\s*(\S+)?\s*$", line)
        if line.startswith("  - "):
            current = {}
        if entry and current is not None and (line.startswith("  - ") or line.startswith("    .")):
            key, value = entry.group(2), entry.group(3)
            if value is not None:
                current[key] = value
                if key == "name":
                    kernels[value] = current
    return kernels


def _waves_per_simd(chip, total_vgprs):
    """VGPR-limited waves per SIMD for CDNA chips (512 unified registers per lane, granule 8, at most 8 waves)."""
    if chip not in ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950") or total_vgprs <= 0:
        return None
    granule = 8
    allocated = -(-total_vgprs // granule) * granule
    return max(0, min(8, 512 // allocated))


def amdhsa_kernels(isa, chip):
    """One dict per `.amdhsa_kernel` block of an AMDGCN ISA dump."""
    metadata = _metadata(isa)
    kernels = []
    for name, block in re.findall(r"^\s*\.amdhsa_kernel (\S+)\n(.*?)^\s*\.end_amdhsa_kernel", isa, re.M | re.S):
        directives = _directives(block)
        meta = metadata.get(name, {})
        vgprs = directives.get("next_free_vgpr", 0)
        kernel = {
            "name": name,
            "registers": vgprs,
            "vgprs": int(meta.get("vgpr_count", vgprs)),
            "agprs": int(meta.get("agpr_count", 0)),
            "sgprs": int(meta.get("sgpr_count", directives.get("next_free_sgpr", 0))),
            "shared_bytes": directives.get("group_segment_fixed_size", 0),
            "local_bytes": directives.get("private_segment_fixed_size", 0),
            "vgpr_spills": int(meta.get("vgpr_spill_count", 0)),
            "sgpr_spills": int(meta.get("sgpr_spill_count", 0)),
            "wavefront_size": int(meta.get("wavefront_size", 64)),
            "occupancy": _waves_per_simd(chip, vgprs),
        }
        kernel["spills"] = kernel["vgpr_spills"] + kernel["sgpr_spills"]
        kernels.append(kernel)
    return kernels
