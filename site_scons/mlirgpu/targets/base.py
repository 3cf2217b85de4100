"""The target interface every GPU target implements (one pipeline, per-target hooks)."""
import functools
import os
import re
from dataclasses import dataclass, field

from .. import process, toolchain
from ..errors import CompileError


class Library:
    """A bitcode library to link: its path, named metadata to erase, and whether to retarget it first."""

    def __init__(self, path, strip_named=(), retarget=False):
        self.path = path
        self.strip_named = tuple(strip_named)
        self.retarget = retarget

    def as_args(self):
        return (self.path, list(self.strip_named), self.retarget)


@dataclass(frozen=True)
class TargetAttr:
    """One target attribute of a gpu.module (`#nvvm.target<...>`), with its target's defaults applied."""

    target: object  # the Target implementation
    text: str
    params: dict = field(default_factory=dict)

    @property
    def chip(self):
        return self.params.get("chip", self.target.default_chip)

    @property
    def triple(self):
        return self.params.get("triple", self.target.default_triple)

    @property
    def features(self):
        return self.params.get("features", "")

    @property
    def opt_level(self):
        return int(self.params.get("O", self.target.default_opt_level))

    @property
    def link(self):
        return tuple(self.params.get("link", ()))

    @property
    def flags(self):
        return self.params.get("flags", {}) or {}

    @property
    def abi(self):
        return self.params.get("abi", "600")


# The parameters every target attribute takes and their types; targets add their own.
COMMON_PARAMETERS = {"O": int, "triple": str, "chip": str, "flags": dict, "link": list}


class Target:
    name = None  # 'nvvm' | 'rocdl': the --target / GPU_TARGET value
    attribute = None  # the MLIR attribute name, e.g. 'nvvm.target'
    default_triple = None
    default_chip = None
    default_opt_level = 2
    parameters = COMMON_PARAMETERS

    def parameter_problem(self, params):
        """Why the attribute's parameters cannot be compiled as written (unknown name, wrong type, O out of
        range, a link entry that is not a string), or None."""
        for key, value in params.items():
            expected = self.parameters.get(key)
            if expected is None:
                return f"unknown parameter '{key}' of #{self.attribute}"
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                return f"parameter '{key}' of #{self.attribute} must be {expected.__name__}"
        if params.get("O", self.default_opt_level) not in (0, 1, 2, 3):
            return f"invalid optimization level O = {params['O']}"
        if not all(isinstance(item, str) for item in params.get("link", [])):
            return f"parameter 'link' of #{self.attribute} must hold strings"
        return None

    def check_chip(self, chip):
        """Raise a CompileError naming the supported chips when LLVM does not know `chip`."""
        known = _processors(self.default_triple)
        if known and chip not in known:
            close = [c for c in known if c.startswith(chip[:4])][:12]
            raise CompileError(
                f"unknown {self.name} chip '{chip}'",
                fix=f"use one of LLVM's {self.name} processors, e.g. {', '.join(close or known[:12])}",
            )

    def conversion_pass(self, chips):
        """The pass converting a target-neutral gpu.module to this target's LLVM dialect."""
        raise NotImplementedError

    def lowering_pipeline(self, chips, features, opt_level, before_all=""):
        """The built-in mlir-opt pipeline for target-neutral code (as upstream's integration tests lower it):
        outline kernels, attach this target once per chip, lower affine and scf, convert the gpu.modules.
        `before_all` holds extra passes to run first (the error hints suggest some)."""
        attach = ", ".join(f"{self.name}-attach-target{{chip={chip} O={opt_level}"
                           + (f" features={features}" if features else "") + "}" for chip in chips)
        return (f"builtin.module({before_all}gpu-kernel-outlining, {attach}, lower-affine, convert-scf-to-cf, "
                f"gpu.module({self.conversion_pass(chips)}, canonicalize, cse, "
                "reconcile-unrealized-casts))")

    def attach_pipeline(self, chips, features, opt_level):
        """Attach this target (once per chip) to gpu.modules that carry none, after a user's own lowering."""
        attach = ", ".join(f"{self.name}-attach-target{{chip={chip} O={opt_level}"
                           + (f" features={features}" if features else "") + "}" for chip in chips)
        return f"builtin.module({attach})"

    def default_build_chip(self, options, environment=None):
        """The chip target-neutral modules get when the build names none (documented per target)."""
        return self.default_chip

    def predicted_libraries(self, attr, symbols, ops, lowered, options, environment=None):
        """Paths of the bitcode files a job of this target may link for a module, found without compiling, from the `symbols` its text names and the `ops` it uses (`lowered`: the module is
        target-neutral code the build lowers): build tools make them dependencies. It may name more than the
        compile links, never fewer; files that do not exist are left out (the compile reports them)."""
        return [path for path in attr.link if os.path.isfile(path)]

    def libraries(self, job, worker, options):
        """Pre-link hook plus the ordered list of `Library` objects to link (user -l first, as upstream)."""
        raise NotImplementedError

    def binary_suffixes(self, fmt):
        """File suffixes the serializer writes for format `fmt` ('bin' or 'fatbin'); the last is embedded."""
        raise NotImplementedError

    def serialize(self, job, isa, fmt, options, scratch):
        """Turn ISA text into binaries: returns {suffix: bytes} for `binary_suffixes(fmt)`."""
        raise NotImplementedError

    def object_properties(self, job, fmt):
        """Properties upstream's serializer records in the `#gpu.object` (they shape the host launch glue)."""
        return {}

    def combine(self, jobs, outputs, options, scratch):
        """One fat container holding the binaries of several chips of one module (see pipeline.combined_suffix)."""
        raise NotImplementedError


@functools.lru_cache(maxsize=None)
def _processors(triple):
    """The processor names LLVM accepts for `triple` (from `llvm-mc -mcpu=help`)."""
    text = toolchain.tool_output(toolchain.llvm_tool("llvm-mc"), (f"--triple={triple}", "-mcpu=help")) or ""
    section = text.split("Available CPUs for this target:", 1)[-1].split("Available features", 1)[0]
    return tuple(re.findall(r"^\s+(\S+)\s+- ", section, re.M))


def run_tool(argv, what, job, fix=None, names=None):
    """Run a serializer tool; a failure becomes a CompileError with its output and a repro command. `names`
    maps scratch files to what the user knows them as (the dump names), in the tool's messages."""
    label = f"module @{job.module.name} ({job.chip}): {what}"
    result = process.run(argv, label)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
        for scratch, shown in (names or {}).items():
            output = output.replace(scratch, shown)
        first = next((line.strip() for line in output.splitlines() if line.strip()), f"exit code {result.returncode}")
        raise CompileError(f"{label} failed: {first}", fix=fix, detail=output + "\nrepro: " + " ".join(argv))
    return result
