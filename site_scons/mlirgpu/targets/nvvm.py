"""NVVM: PTX from LLVM's NVPTX back end, cubin from ptxas, fatbin from fatbinary (CUDA toolkit); kernel
resources from `ptxas -v`."""
import os
import re

from ..llvm import process, toolchain
from . import cuda
from ..util.cmdline import tokenize_cmd_options
from ..errors import ToolMissing
from ..util.naming import file_stem
from ..compile_options import hint
from .base import Target
from .roles import (COMMON_PARAMETERS, Checks, Codegen, Library, Lowering, Outputs, Toolchain, VendorSection,
                    existing, run_tool)


class NVVMChecks(Checks):
    """NVVM's attribute: features, verifyTarget, and ptxas-cmd-options among its flags."""

    parameters = {**COMMON_PARAMETERS, "features": str, "verifyTarget": bool}

    def parameter_problem(self, params):
        problem = super().parameter_problem(params)
        options = params.get("flags", {}).get("ptxas-cmd-options")
        if problem is None and options is not None and not isinstance(options, list):
            problem = 'flags "ptxas-cmd-options" must be an array of strings'
        return problem


class NVVMLowering(Lowering):
    """convert-gpu-to-nvvm, nvgpu's conversion, and the oldest chip the found ptxas takes."""

    attach_pass = "nvvm-attach-target"
    dialect_passes = {**Lowering.dialect_passes, "nvgpu": "convert-nvgpu-to-nvvm, "}  # TMA, mbarrier, warpgroup ops
    lowers_cf_assert = True  # to __assertfail

    def conversion_pass(self, chips):
        return "convert-gpu-to-nvvm"

    def example_lowering(self):
        """Upstream's named pipeline, with a chip and PTX version that CUDA 12 and 13 take."""
        return "gpu-lower-to-nvvm-pipeline{cubin-chip=sm_80 cubin-features=+ptx80}"

    def default_build_chip(self, options, environment=None):
        """The oldest chip the found ptxas accepts (sm_75 for CUDA 13); upstream's sm_50 without a toolkit."""
        root = self.target.toolchain.toolkit(options, environment)
        ptxas = os.path.join(root, "bin", "ptxas") if root else ""
        chips = cuda.ptxas_chips(ptxas) if ptxas and os.path.isfile(ptxas) else []
        return chips[0] if chips else self.target.default_chip


class NVVMCodegen(Codegen):
    """libdevice linked whenever a toolkit is known; ptxas and fatbinary as the serializer."""

    kernel_convention = "ptx_kernel"

    def failure_fix(self, message):
        found = re.search(r"PTX version [\d.]+ does not support target '(\w+)'", message)
        if found:
            return (f"raise the PTX version for {found.group(1)}: {hint('features', '+ptx80')} "
                    "(cubin-features=+ptx80 in gpu-lower-to-nvvm-pipeline, whose default is +ptx60)")
        return None

    def predicted_libraries(self, attr, symbols, ops, lowered, options, environment=None):
        """The attribute's link files and libdevice, which upstream links whenever a toolkit is known."""
        libdevice = cuda.libdevice(self.target.toolchain.toolkit(options, environment))
        own = super().predicted_libraries(attr, symbols, ops, lowered, options, environment)
        return own + ([libdevice] if libdevice else [])

    def load_bitcode_files(self, job, module, options):
        """Upstream's order: -l files, the attribute's link=[...], then libdevice whenever a toolkit is known."""
        from ..llvm.ops import declared_functions

        root = self.target.toolchain.toolkit(options)
        libdevice = cuda.libdevice(root)
        if libdevice:
            return super().load_bitcode_files(job, module, options) + [Library(libdevice)]
        needs = [name for name in declared_functions(module) if name.startswith("__nv_")]
        if needs:
            where = f" ({root} has no {cuda.LIBDEVICE})" if root else ""
            raise ToolMissing(f"module @{job.module.name} calls {needs[0]} from libdevice, but no CUDA toolkit was "
                              f"found{where}", fix=cuda.INSTALL)
        return super().load_bitcode_files(job, module, options)

    def provided_elsewhere(self, name):
        """NVVMReflect's `__nvvm_reflect` (the optimizer), and what ptxas and the CUDA driver provide: printf's
        `vprintf`, `__assertfail`, device `malloc` and `free`."""
        return name in ("__nvvm_reflect", "vprintf", "__assertfail", "malloc", "free")

    def library_inputs(self, job, options):
        return super().library_inputs(job, options) + existing([cuda.libdevice(self.target.toolchain.toolkit(options))])

    def module_to_object(self, job, assembly, options, scratch):
        """The cubin, and the fatbin for format fatbin (named here: a variant target may rename its dumps)."""
        return self.run_binary_commands(job, assembly, options, scratch,
                                        ("cubin", "fatbin") if options.format == "fatbin" else ("cubin",))

    def binary_commands(self, job, options, folder):
        """ptxas on the ISA dump (PTX), then fatbinary with the cubin and the PTX for format fatbin: as
        upstream's NVVM serializer runs them, on files named as the dumps in `folder`."""
        name = lambda suffix: os.path.join(folder, f"{options.dump_prefix}{job.stem}.{suffix}")  # noqa: E731
        toolkit = self.target.toolchain.toolkit(options)
        ptxas = cuda.cuda_tool("ptxas", toolkit)
        argv = [ptxas, "-arch", job.chip, name("isa"), "-o", name("cubin"), "--opt-level", str(job.opt_level)]
        opts = tokenize_cmd_options(options.opts)
        argv += [arg for arg in opts if arg != "-32"]  # upstream: `-32` is fatbinary's, every other is ptxas's
        argv += ptxas_cmd_options(job.attr)
        commands = [(argv, "ptxas", _ptxas_fix(job.chip, ptxas, job.attr.features))]
        if options.format == "fatbin":
            sm = _sm(job.chip)
            commands.append(([cuda.cuda_tool("fatbinary", toolkit), "-32" if "-32" in opts else "-64",
                              f"--image3=kind=elf,sm={sm},file={name('cubin')}",
                              f"--image3=kind=ptx,sm={sm},file={name('isa')}", "--create", name("fatbin")],
                             "fatbinary", None))
        return commands


class NVVMOutputs(Outputs):
    """cubin and fatbin, one fatbin for several chips, CUDA's fat binary section, ptxas -v resources."""

    vendor_section = VendorSection(".nv_fatbin", ".nvFatBinSegment", 0x466243B1, 8, "cuobjdump")
    embeds_fat_as = "fatbin"

    def assembly_chip(self, text):
        match = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
        return match.group(1) if match else None

    def binary_suffixes(self, fmt):
        return ("cubin", "fatbin") if fmt == "fatbin" else ("cubin",)

    def object_properties(self, job, fmt):
        # NVVM records the O level for ISA objects: the glue passes it to mgpuModuleLoadJIT.
        return {"O": f"{job.opt_level} : i32"} if fmt == "isa" else {}

    def fat_container(self, count, options):
        """Several chips with format fatbin: one fatbin (as nvcc makes)."""
        return "fatbin" if options.format == "fatbin" and count > 1 else None

    def combine_commands(self, jobs, options, folder, name):
        """fatbinary with every chip's cubin dump, plus the PTX dump of the newest chip (as nvcc does)."""
        dump = lambda job, suffix: os.path.join(folder, f"{options.dump_prefix}{job.stem}.{suffix}")  # noqa: E731
        bits = "-32" if "-32" in tokenize_cmd_options(options.opts) else "-64"
        argv = [cuda.cuda_tool("fatbinary", self.target.toolchain.toolkit(options)), bits]
        argv += [f"--image3=kind=elf,sm={_sm(job.chip)},file={dump(job, 'cubin')}" for job in jobs]
        newest = max(jobs, key=lambda job: int(re.sub(r"\D", "", _sm(job.chip)) or 0))
        argv += [f"--image3=kind=ptx,sm={_sm(newest.chip)},file={dump(newest, 'isa')}", "--create",
                 os.path.join(folder, name)]
        return [(argv, "fatbinary (several chips)", None)]

    def combine(self, jobs, binaries, assemblies, options, scratch):
        """One fatbin: every chip's cubin, plus the PTX of the newest chip, via fatbinary (combine_commands)."""
        for job, binary, assembly in zip(jobs, binaries, assemblies):
            for suffix, data in (("cubin", binary["cubin"]), ("isa", assembly.text.encode("utf-8"))):
                with open(os.path.join(scratch, f"{options.dump_prefix}{job.stem}.{suffix}"), "wb") as handle:
                    handle.write(data)
        name = f"{options.dump_prefix}{file_stem(jobs[0].module.name)}.fatbin"
        for argv, what, fix in self.combine_commands(jobs, options, scratch, name):
            run_tool(argv, what, jobs[0], fix=fix, names={scratch + os.sep: ""})
        with open(os.path.join(scratch, name), "rb") as handle:
            return handle.read()

    def kernel_resources(self, job, isa_path, options, toolkit):
        """From the log of the compile itself when it ran ptxas with -v (the job's `log`); else from `ptxas -v`
        run as the compile ran it (its recorded command: the build's options and the attribute's
        ptxas-cmd-options), writing nowhere. Per entry function its registers, barriers, shared and constant
        memory, stack frame and spill bytes."""
        kernels = parse_ptxas_verbose(job.get("log") or "")
        if kernels:
            return kernels
        recorded = next((entry["argv"] for entry in job.get("repro", [])
                         if os.path.basename(entry["argv"][0]) == "ptxas"), None)
        if recorded and os.path.isfile(recorded[0]) and os.path.basename(isa_path) in recorded:
            argv = list(recorded)
            argv[argv.index("-o") + 1] = os.devnull
            argv[argv.index(os.path.basename(isa_path))] = isa_path
            argv.insert(1, "-v")
        else:  # a record written before commands were recorded
            ptxas = cuda.cuda_tool("ptxas", cuda.cuda_toolkit(toolkit or None))
            extra = [arg for arg in tokenize_cmd_options(options.get("opts", "") or "") if arg != "-32"]
            argv = [ptxas, "-v", "-arch", job["chip"], "--opt-level", str(job["opt_level"]), *extra, isa_path,
                    "-o", os.devnull]
        result = process.run(argv, f"resource usage of {isa_path}")
        return parse_ptxas_verbose(result.stderr.decode("utf-8", "replace") + result.stdout.decode("utf-8", "replace"))


class NVVMToolchain(Toolchain):
    """The CUDA toolkit: ptxas, fatbinary, libdevice."""

    def toolkit(self, options, environment=None):
        return cuda.cuda_toolkit(options.toolkit, environment)

    def device_libraries(self, options):
        root = self.toolkit(options)
        return [cuda.libdevice(root)] if root and cuda.libdevice(root) else []

    def owns_toolkit(self, path):
        return os.path.isfile(os.path.join(path, "bin", "ptxas"))

    def tools(self, options, environment=None):
        root = self.toolkit(options, environment)
        return [path for path in (toolchain.executable(os.path.join(root, "bin", name))
                                  for name in ("ptxas", "fatbinary")) if path] if root else []


class NVVM(Target):
    """NVIDIA GPUs through MLIR's NVVM target."""

    name = "nvvm"
    attribute = "nvvm.target"
    default_triple = "nvptx64-nvidia-cuda"
    default_chip = "sm_50"
    Checks, Lowering, Codegen, Outputs, Toolchain = NVVMChecks, NVVMLowering, NVVMCodegen, NVVMOutputs, NVVMToolchain


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")


def parse_ptxas_verbose(text):
    """Kernels of a `ptxas -v` log, in its order."""
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


def ptxas_cmd_options(attr):
    """The target attribute's `flags = {"ptxas-cmd-options" = [...]}`: its strings, in order (upstream skips
    anything else in the array)."""
    value = attr.flags.get("ptxas-cmd-options", [])
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


_PTX_FOR_OLDER = 80  # a PTX version (8.0) that LLVM 22 and CUDA 12-13 take for every chip from sm_75 to sm_90a


def _sm(chip):
    """`sm_90a` -> `90a`, the form fatbinary's `sm=` takes."""
    return chip.split("_", 1)[-1]


def _ptxas_fix(chip, ptxas, features=""):
    """The fix for a chip ptxas refuses: the oldest it takes, and with it a PTX version new enough for that chip
    when the attribute's is older (gpu-lower-to-nvvm-pipeline's defaults, sm_50 and +ptx60, need both changed:
    one message, not a second round trip for LLVM's "PTX version 6.0 does not support target")."""
    accepted = cuda.ptxas_chips(ptxas)
    if accepted and chip not in accepted:
        ptx = re.search(r"\+ptx(\d+)", features or "")
        if ptx and int(ptx.group(1)) < _PTX_FOR_OLDER and int(re.sub(r"\D", "", _sm(accepted[0])) or 0) < 100:
            return (f"this ptxas does not take '{chip}', and {features} is too old for the chips it takes: use "
                    f"{hint('chip', accepted[0])} {hint('features', f'+ptx{_PTX_FOR_OLDER}')} or newer (a target attribute's "
                    "chip and features; gpu-lower-to-nvvm-pipeline's cubin-chip and cubin-features, whose defaults "
                    "are sm_50 and +ptx60), or a CUDA toolkit that takes the chip")
        return (f"this ptxas does not take '{chip}': use {accepted[0]} or newer (in the target attribute, or "
                f"{hint('chip')} for target-neutral code), or a CUDA toolkit that supports it")
    return f"check the chip and {hint('opts')} (-v shows the tool's output and a repro command)"

