"""The stage table: one ordered list of the stages of a job, in upstream `ModuleToObject::run` order.

Each stage is a function from the previous stage's output to its own, named after the dump it produces:

    initial.ll  mlir-translate's LLVM IR (as the target's serializer amends it), parsed; triple and data
                layout from the target machine
    linked.ll   the target's pre-link step, then its libraries linked only-needed and internalized
    opt.ll      LLVM's default pipeline at the target's O level
    isa         the target's assembly (PTX, AMDGCN, SPIR-V text)
    binary      the target's serializer (cubin + fatbin, hsaco, spv); skipped for format=isa

The same table drives the pipeline (mlirgpu.pipeline), the dump names (mlirgpu.planning, which the SCons emitter
and `list-outputs` use), the docs and the tests, so they cannot drift. Targets own what differs (mlirgpu.targets):
the stages only call their hooks. The LLVM work is imported when a stage runs (in a worker), so reading the table
costs a build tool nothing.
"""
import os
from dataclasses import dataclass

from .errors import CompileError
from .options import hint


@dataclass(frozen=True)
class Assembly:
    """The `isa` stage's output: the assembly text (the dump) and the module it came from (a serializer may
    emit the binary from the module, as a SPIR-V serializer does)."""

    text: str
    module: object

    def __str__(self):
        return self.text


def _initial(compile_, job, llvm_ir):
    from . import llvm_ops

    attr = job.attr
    targets = job.module.targets
    for earlier in targets[: targets.index(attr) + 1]:  # upstream's serializers change the gpu.module in place
        llvm_ir = earlier.target.edit_translation(job.module, llvm_ir)
    cpu, features = job.target.machine_cpu(attr)
    return llvm_ops.parse(llvm_ir, attr.triple, cpu, features, attr.opt_level)


def _linked(compile_, job, module):
    from . import llvm_ops

    job.target.pre_link(job, module)
    libraries = job.target.libraries(job, module, compile_.options)
    for library in libraries:
        if not os.path.isfile(library.path):
            problem = "is not a regular file" if os.path.exists(library.path) else "does not exist"
            raise CompileError(f"bitcode library '{library.path}' {problem}", file=job.source, line=job.module.line,
                               fix=f"fix the {hint('link_libs')} / link=[...] path")
    compile_.dependencies += [library.path for library in libraries]
    return llvm_ops.link(module, [library.as_args() for library in libraries])


def _opt(compile_, job, module):
    from . import llvm_ops

    return llvm_ops.optimize(module, job.opt_level)


def _isa(compile_, job, module):
    from . import llvm_ops

    return Assembly(llvm_ops.emit_assembly(module, job.target.isolated_codegen), module)


def _binary(compile_, job, assembly):
    return job.target.serialize(job, assembly, compile_.options, compile_.scratch)


@dataclass(frozen=True)
class Stage:
    suffix: str  # the dump's suffix; for `binary`, the target names its files (binary_suffixes)
    run: object  # (compile, job, previous output) -> output
    upstream: str  # the counterpart in upstream's ModuleToObject, for the docs


STAGES = (
    Stage("initial.ll", _initial, "translateToLLVMIR, setDataLayoutAndTriple"),
    Stage("linked.ll", _linked, "handleModulePreLink, loadBitcodeFiles, linkFiles"),
    Stage("opt.ll", _opt, "optimizeModule"),
    Stage("isa", _isa, "translateToISA"),
    Stage("binary", _binary, "compileToBinary / moduleToObject"),
)
BINARY = "binary"


def for_format(fmt):
    """The stages a job runs for output format `fmt` (no serializer for `isa`)."""
    return [stage for stage in STAGES if stage.suffix != BINARY or fmt != "isa"]


def dump_suffixes(target, fmt):
    """The dump suffixes one job writes, in stage order."""
    suffixes = []
    for stage in for_format(fmt):
        suffixes += list(target.binary_suffixes(fmt)) if stage.suffix == BINARY else [stage.suffix]
    return suffixes
