"""Per-kernel resource usage: NVVM from `ptxas -v`, ROCDL from the AMDGPU code object metadata in the ISA.

Every kernel gets the same core fields so reports and regression rules can treat both alike:
`registers` (NVVM registers / AMDGPU VGPRs as allocated, `.amdhsa_next_free_vgpr`), `spills` (NVVM spill store +
load bytes / AMDGPU VGPR + SGPR spill counts), `shared_bytes` (shared memory / LDS), `local_bytes` (stack frame /
scratch). Target-specific fields are kept beside them.
"""
import re

from . import process

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")


def nvvm_kernels(ptxas, ptx_path, chip, opt_level, extra_options=()):
    """Run `ptxas -v` on a PTX dump; one dict per entry function, in ptxas's order."""
    argv = [ptxas, "-v", "-arch", chip, "--opt-level", str(opt_level), *extra_options, ptx_path, "-o", "/dev/null"]
    result = process.run(argv, f"resource usage of {ptx_path}")
    return parse_ptxas_verbose(result.stderr.decode("utf-8", "replace") + result.stdout.decode("utf-8", "replace"))


def parse_ptxas_verbose(text):
    kernels = []
    current = None
    for line in text.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = {"name": entry.group(1), "registers": 0, "barriers": 0, "shared_bytes": 0,
                       "constant_bytes": 0, "local_bytes": 0, "spill_stores": 0, "spill_loads": 0}
            kernels.append(current)
            continue
        if current is None:
            continue
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if frame:
            current["local_bytes"], current["spill_stores"], current["spill_loads"] = map(int, frame.groups())
        used = re.search(r"Used (\d+) registers", line)
        if used:
            current["registers"] = int(used.group(1))
            barriers = re.search(r"used (\d+) barriers", line)
            current["barriers"] = int(barriers.group(1)) if barriers else 0
            smem = re.search(r"(\d+) bytes smem", line)
            current["shared_bytes"] = int(smem.group(1)) if smem else 0
            current["constant_bytes"] = sum(int(n) for n in re.findall(r"(\d+) bytes cmem\[\d+\]", line))
            current = None  # the "Used" line closes an entry
    for kernel in kernels:
        kernel["spills"] = kernel["spill_stores"] + kernel["spill_loads"]
    return kernels


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


def rocdl_kernels(isa, chip):
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
