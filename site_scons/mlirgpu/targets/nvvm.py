"""NVVM: PTX from LLVM's NVPTX back end, cubin from ptxas, fatbin from fatbinary (CUDA toolkit)."""
import os
import re

from .. import toolchain
from ..cmdline import tokenize_cmd_options
from ..options import hint
from ..errors import ToolMissing
from .base import COMMON_PARAMETERS, Library, Target, run_tool


class NVVM(Target):
    name = "nvvm"
    attribute = "nvvm.target"
    default_triple = "nvptx64-nvidia-cuda"
    default_chip = "sm_50"
    parameters = {**COMMON_PARAMETERS, "features": str, "verifyTarget": bool}

    def parameter_problem(self, params):
        problem = super().parameter_problem(params)
        options = params.get("flags", {}).get("ptxas-cmd-options")
        if problem is None and options is not None and not isinstance(options, list):
            problem = 'flags "ptxas-cmd-options" must be an array of strings'
        return problem

    def toolkit(self, options, environment=None):
        return toolchain.cuda_toolkit(options.toolkit, environment)

    def conversion_pass(self, chips):
        return "convert-gpu-to-nvvm"

    def default_build_chip(self, options, environment=None):
        """The oldest chip the found ptxas accepts (sm_75 for CUDA 13); upstream's sm_50 without a toolkit."""
        root = self.toolkit(options, environment)
        ptxas = os.path.join(root, "bin", "ptxas") if root else ""
        chips = toolchain.ptxas_chips(ptxas) if ptxas and os.path.isfile(ptxas) else []
        return chips[0] if chips else self.default_chip

    def predicted_libraries(self, attr, symbols, ops, lowered, options, environment=None):
        """The attribute's link files and libdevice, which upstream links whenever a toolkit is known."""
        libdevice = toolchain.libdevice(self.toolkit(options, environment))
        own = super().predicted_libraries(attr, symbols, ops, lowered, options, environment)
        return own + ([libdevice] if libdevice else [])

    def libraries(self, job, worker, options):
        # Upstream order: -l files, the target's link=[...], then libdevice whenever a toolkit is known.
        paths = list(options.link_libs) + list(job.attr.link)
        libdevice = toolchain.libdevice(self.toolkit(options))
        if libdevice:
            paths.append(libdevice)
        else:
            needs = [name for name in worker.undefined_functions(job) if name.startswith("__nv_")]
            if needs:
                raise ToolMissing(
                    f"module @{job.module.name} calls {needs[0]} from libdevice, but no CUDA toolkit was found",
                    fix=toolchain.INSTALL["cuda"],
                )
        return [Library(path) for path in paths]

    def binary_suffixes(self, fmt):
        return ("cubin", "fatbin") if fmt == "fatbin" else ("cubin",)

    def serialize(self, job, isa, fmt, options, scratch):
        toolkit = self.toolkit(options)
        ptxas = toolchain.cuda_tool("ptxas", toolkit)
        ptx_path = os.path.join(scratch, "kernel.ptx")
        cubin_path = os.path.join(scratch, "kernel.cubin")
        with open(ptx_path, "w", encoding="utf-8") as handle:
            handle.write(isa)
        argv = [ptxas, "-arch", job.chip, ptx_path, "-o", cubin_path, "--opt-level", str(job.opt_level)]
        opts = tokenize_cmd_options(options.opts)
        argv += [arg for arg in opts if arg != "-32"]  # upstream: `-32` is fatbinary's, every other is ptxas's
        argv += ptxas_cmd_options(job.attr)
        run_tool(argv, "ptxas", job, fix=_ptxas_fix(job.chip, ptxas), names={ptx_path: f"{job.stem}.isa"})
        with open(cubin_path, "rb") as handle:
            outputs = {"cubin": handle.read()}
        if fmt == "fatbin":
            fatbinary = toolchain.cuda_tool("fatbinary", toolkit)
            fatbin_path = os.path.join(scratch, "kernel.fatbin")
            sm = _sm(job.chip)
            run_tool(
                [fatbinary, "-32" if "-32" in opts else "-64", f"--image3=kind=elf,sm={sm},file={cubin_path}",
                 f"--image3=kind=ptx,sm={sm},file={ptx_path}", "--create", fatbin_path],
                "fatbinary", job,
            )
            with open(fatbin_path, "rb") as handle:
                outputs["fatbin"] = handle.read()
        return outputs

    def object_properties(self, job, fmt):
        # NVVM records the O level for ISA objects: the glue passes it to mgpuModuleLoadJIT.
        return {"O": f"{job.opt_level} : i32"} if fmt == "isa" else {}

    def combine(self, jobs, outputs, options, scratch):
        """One fatbin: every chip's cubin, plus the PTX of the newest chip (as nvcc does), via fatbinary."""
        bits = "-32" if "-32" in tokenize_cmd_options(options.opts) else "-64"
        argv = [toolchain.cuda_tool("fatbinary", self.toolkit(options)), bits]
        for index, (job, output) in enumerate(zip(jobs, outputs)):
            path = os.path.join(scratch, f"combine{index}.cubin")
            with open(path, "wb") as handle:
                handle.write(output.binaries["cubin"])
            argv.append(f"--image3=kind=elf,sm={_sm(job.chip)},file={path}")
        newest = max(range(len(jobs)), key=lambda i: int(re.sub(r"\D", "", _sm(jobs[i].chip)) or 0))
        ptx = os.path.join(scratch, "combine.ptx")
        with open(ptx, "w", encoding="utf-8") as handle:
            handle.write(outputs[newest].isa)
        fatbin = os.path.join(scratch, "combined.fatbin")
        argv += [f"--image3=kind=ptx,sm={_sm(jobs[newest].chip)},file={ptx}", "--create", fatbin]
        run_tool(argv, "fatbinary (several chips)", jobs[newest])
        with open(fatbin, "rb") as handle:
            return handle.read()


def ptxas_cmd_options(attr):
    """The target attribute's `flags = {"ptxas-cmd-options" = [...]}`: its strings, in order (upstream skips
    anything else in the array)."""
    value = attr.flags.get("ptxas-cmd-options", [])
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _sm(chip):
    """`sm_90a` -> `90a`, the form fatbinary's `sm=` takes."""
    return chip.split("_", 1)[-1]


def _ptxas_fix(chip, ptxas):
    accepted = toolchain.ptxas_chips(ptxas)
    if accepted and chip not in accepted:
        return (f"this ptxas does not take '{chip}': use {accepted[0]} or newer (in the target attribute, or "
                f"{hint('chip')} for target-neutral code), or a CUDA toolkit that supports it")
    return f"check the chip and {hint('opts')} (-v shows the tool's output and a repro command)"

