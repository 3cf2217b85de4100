"""XeVM (Intel GPUs): SPIR-V from LLVM's SPIR-V back end, in process; no external tool (as MLIR 22.1.8).

Upstream 22.1.8 (mlir/lib/Target/LLVM/XeVM/Target.cpp), measured against mlir-opt 22.1.8:
- before translating, the serializer sets `intel_reqd_sub_group_size = 16` on the first `llvm.func` of the
  gpu.module with `gpu.kernel` (on the op, so later targets of the same module see it too);
- the target machine gets the triple only, no CPU and no features: the chip is for ocloc, which 22.1.8 never
  runs, so any chip name is taken (LLVM's SPIR-V back end has no processors);
- `-l` files, then the attribute's `linkFiles`, are linked only-needed (no device libraries, no pre-link step);
- format isa is the SPIR-V assembly text with a NUL, recorded with `properties = {O = N}`; formats bin and
  fatbin are both the SPIR-V binary LLVM emits for the same optimized module: there is no fat container.
Kernel resources (registers, spills) exist only after the driver's compiler (IGC) has run, so the report lists
the kernels with their names alone.
"""
import os
import re

from ..llvm import toolchain
from ..errors import CompileError
from ..util.mlirops import first_function_with
from ..util.mlirtext import Unreadable
from ..llvm.mlirtools import run_mlir_tool
from ..compile_options import hint
from .base import Target
from .roles import COMMON_PARAMETERS, Checks, Codegen, Lowering, Outputs

SUB_GROUP_SIZE = 16  # what 22.1.8's serializer requires of the first kernel


class XeVMChecks(Checks):
    """XeVM's attribute: `linkFiles`, spirv* triples, and any chip name (none is checked)."""

    parameters = {**{key: kind for key, kind in COMMON_PARAMETERS.items() if key != "link"}, "linkFiles": list}
    link_parameter = "linkFiles"

    def parameter_problem(self, params):
        problem = super().parameter_problem(params)
        triple = params.get("triple", self.target.default_triple)
        if problem is None and not triple.startswith("spirv"):
            problem = f"unsupported XeVM target triple '{triple}' (XeVM takes spirv* triples only)"
        return problem

    def chips(self):
        """None to check against: 22.1.8 gives the chip to no tool (`llvm-mc -mcpu=help` has no SPIR-V CPUs)."""
        return ()


class XeVMLowering(Lowering):
    """The SPIR-V conversion inside the gpu.module, and no features on the attach pass."""

    attach_pass = "xevm-attach-target"

    def lowering_pipeline(self, chips, features, opt_level, before_all=""):
        """As the built-in recipe of the other targets, with the SPIR-V conversion first inside the gpu.module
        (it retypes index block arguments, so scf-to-cf must follow it) and `convert-to-llvm` there, since
        `convert-cf-to-llvm` runs on builtin modules only. Kernels on memrefs get the SPIR-V that
        `gpu-lower-to-xevm-pipeline` gives them."""
        return (f"builtin.module({before_all}gpu-kernel-outlining, {self.attach(chips, '', opt_level)}, "
                "lower-affine, gpu.module(convert-gpu-to-llvm-spv{use-64bit-index=true}, convert-xevm-to-llvm, "
                "convert-scf-to-cf, convert-to-llvm, canonicalize, cse, reconcile-unrealized-casts), "
                "convert-scf-to-cf)")

    def lowering_fix(self, op, line):
        if op == "gpu.shuffle":
            return ("MLIR 22 converts gpu.shuffle for XeVM only with width 16, in a gpu.func with attributes "
                    "{intel_reqd_sub_group_size = 16 : i32}")
        if "#gpu.address_space<workgroup>" in line:
            return ("MLIR 22 has no XeVM lowering for workgroup memory in #gpu.address_space<workgroup> (upstream's "
                    "pipeline fails alike; an attribution in memory space 3 becomes a kernel parameter no launch "
                    "passes): use an llvm.mlir.global in addrspace 3, or lower with your own pipeline "
                    f"({hint('lowering')})")
        return None

    def attach_pipeline(self, chips, features, opt_level, modules=""):
        return f"builtin.module({self.attach(chips, '', opt_level, modules)})"  # xevm-attach-target has no features


class XeVMCodegen(Codegen):
    """No CPU for the target machine, the first kernel's sub-group size, SPIR-V emitted in process."""

    kernel_convention = "spir_kernel"
    isolated_codegen = True  # LLVM 22's SPIR-V back end keeps module state in a static (llvm_ops.emit_assembly)

    def machine_cpu(self, attr):
        return "", ""  # ModuleToObject(module, triple, /*chip=*/"", /*features=*/{}, O)

    def edit_translation(self, module, llvm_ir):
        name = first_kernel(module.text)
        return llvm_ir if name is None else set_sub_group_size(llvm_ir, name, SUB_GROUP_SIZE)

    def provided_elsewhere(self, name):
        """SPIR-V's built-ins, which the driver provides: OpenCL's (mangled, `_Z...`), `__spirv_*`, printf."""
        return name.startswith(("_Z", "__spirv_", "__builtin_")) or name == "printf"

    def binary_commands(self, job, options, folder):
        """The stock equivalent of the in-process emission below: `llc -filetype=obj` on the optimized IR (for
        repro.sh only: a compile runs no llc, and needs none)."""
        name = lambda suffix: os.path.join(folder, f"{options.dump_prefix}{job.stem}.{suffix}")  # noqa: E731
        return [([toolchain.command("llc"), f"-O{job.opt_level}", "-filetype=obj", name("opt.ll"), "-o",
                  name("spv")], "emitting SPIR-V (llc)", None)]

    def module_to_object(self, job, assembly, options, scratch):
        from ..llvm import ops as llvm_ops

        data = llvm_ops.emit_object(assembly.module, isolated=self.isolated_codegen)
        if len(data) % 4:
            raise CompileError(f"module @{job.module.name}: SPIR-V code size must be a multiple of 4")
        return {"spv": data}

    def failure_fix(self, message):
        if "requires the following SPIR-V extension" in message:
            return ("MLIR 22's XeVM serializer enables no SPIR-V extensions (mlir-opt fails the same way): write "
                    "the kernel without this instruction (e.g. a fixed-size alloca, integer atomics)")
        return None


class XeVMOutputs(Outputs):
    """One SPIR-V binary for every format, the assembly object with its NUL, no tool log."""

    assembles_from_text = False  # the SPIR-V binary is emitted from the optimized module
    keeps_tool_log = False  # in process: no tool, no log

    def binary_suffixes(self, fmt):
        return ("spv",)

    def embedded_format(self, fmt):
        return "bin"  # fatbin is the same SPIR-V binary

    def assembly_object(self, text):
        return text.encode("utf-8") + b"\0"  # upstream's object keeps the assembly's NUL

    def object_properties(self, job, fmt):
        return {"O": f"{job.opt_level} : i32"} if fmt == "isa" else {}

    def kernel_resources(self, job, isa_path, options, toolkit):
        """The kernels the SPIR-V declares (OpEntryPoint), without resources: IGC assigns those at load time."""
        with open(isa_path, encoding="utf-8", errors="replace") as handle:
            names = re.findall(r'^\s*OpEntryPoint Kernel %\S+ "((?:[^"\\]|\\.)*)"', handle.read(), re.M)
        return [{"name": name, "registers": None, "spills": None, "shared_bytes": None, "local_bytes": None}
                for name in names]


class XeVM(Target):
    """Intel GPUs through MLIR's XeVM target; no toolchain of its own (the default role: no toolkit, no tools)."""

    name = "xevm"
    attribute = "xevm.target"
    default_triple = "spirv64-unknown-unknown"
    default_chip = "bmg"
    Checks, Lowering, Codegen, Outputs = XeVMChecks, XeVMLowering, XeVMCodegen, XeVMOutputs


def first_kernel(text):
    """The first `llvm.func` with `gpu.kernel` directly in the gpu.module `text` (what upstream's walk finds),
    or None; text the reader does not follow is printed by mlir-opt and read again."""
    try:
        return first_function_with(text, "gpu.kernel")
    except (Unreadable, ValueError):
        printed = run_mlir_tool("mlir-opt", ["--mlir-print-local-scope"], None, "reading kernels",
                                text=text)
        return first_function_with(printed, "gpu.kernel")


_BARE_IR_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*\Z")


def _ir_name(name):
    """The function's name as LLVM IR prints it (`@name`, or `@"..."` with escapes)."""
    if _BARE_IR_NAME.match(name):
        return "@" + name
    escaped = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:02X}" for b in name.encode("utf-8"))
    return f'@"{escaped}"'


def set_sub_group_size(llvm_ir, name, size):
    """`llvm_ir` with function `name` carrying `!intel_reqd_sub_group_size !{i32 size}` (replacing one it has),
    as `LLVMFuncOp::setIntelReqdSubGroupSize` before translation gives it; also on a kernel declared without a
    body, which upstream's walk finds first as well."""
    header = re.compile(r"^(?:define|declare) [^\n]*?" + re.escape(_ir_name(name)) + r"\([^\n]*$", re.M)
    match = header.search(llvm_ir)
    if match is None:
        raise CompileError(f"cannot find kernel {name} in the translated LLVM IR")
    node = max((int(n) for n in re.findall(r"^!(\d+) = ", llvm_ir, re.M)), default=-1) + 1
    line = re.sub(r" !intel_reqd_sub_group_size ![0-9]+", "", match.group(0))
    attachment = f" !intel_reqd_sub_group_size !{node}"
    if line.startswith("declare"):  # a declaration's attachments follow `declare` (as LLVM prints them)
        line = "declare" + attachment + line[len("declare") :]
    else:
        line = line[:-2] + attachment + " {" if line.endswith(" {") else line + attachment
    text = llvm_ir[: match.start()] + line + llvm_ir[match.end() :]
    return text.rstrip("\n") + f"\n!{node} = !{{i32 {size}}}\n"
