"""The stage table: one ordered list of the stages of a job, in upstream `ModuleToObject::run` order.

Each stage is a function from the previous stage's output to its own, named after the dump it produces:

    initial.ll  mlir-translate's LLVM IR (as the target's serializer amends it), parsed; triple and data
                layout from the target machine
    linked.ll   the target's pre-link step, then its libraries linked only-needed and internalized
    opt.ll      LLVM's default pipeline at the target's O level
    isa         the target's assembly (PTX, AMDGCN, SPIR-V text)
    binary      the target's serializer (cubin + fatbin, hsaco, spv); skipped for format=isa

A library compile (emit=library) runs `initial.ll` and `linked.ll` (its own libraries linked as a kernel's
are: only what it needs, internalized; its own functions keep the source's linkage), then

    bc          the linked module as LLVM bitcode: what kernels elsewhere link (`-l`, `link = [...]`); not dumped,
                it is the compile's output (mlirgpu.pipeline.library)

The same table drives the pipeline (mlirgpu.pipeline.driver), the dump names (mlirgpu.pipeline.planning, which the SCons emitter
and `list-outputs` use), the docs and the tests, so they cannot drift. A target may add stages of its own
(codegen.stages; tests/marked_target.py adds a dump after `isa`): its jobs, dumps and cache keys then follow
its list (for_target). Targets own what differs (mlirgpu.targets): the stages only call their hooks. The LLVM
work is imported when a stage runs (in a worker), so reading the table costs a build tool nothing.

Each stage also says what, besides its input, shapes its output (`context`: the stage cache's key is the input's
hash and these), and how its output is stored (`save`) and read back (`restore`) by the stage cache.
"""
import os
from dataclasses import dataclass

from ..llvm import backend as llvm_backend, toolchain
from ..errors import CompileError
from ..compile_options import hint
from ..version import __version__


@dataclass(frozen=True)
class Assembly:
    """The `isa` stage's output: the assembly text (the dump) and the module it came from (a serializer may
    emit the binary from the module, as a SPIR-V serializer does)."""

    text: str
    module: object

    def __str__(self):
        return self.text


def amend_translation(job, llvm_ir):
    """The translated LLVM IR the `initial.ll` stage parses: as the target's serializer, and those of targets
    listed before it on the module, change the gpu.module before translating it (upstream changes it in place)."""
    targets = job.module.targets
    for earlier in targets[: targets.index(job.attr) + 1]:
        llvm_ir = earlier.target.codegen.edit_translation(job.module, llvm_ir)
    return llvm_ir


def _initial(compile_, job, llvm_ir):
    from ..llvm import ops as llvm_ops

    attr = job.attr
    cpu, features = job.target.codegen.machine_cpu(attr)
    return llvm_ops.parse(llvm_ir, attr.triple, cpu, features, attr.opt_level)


def _linked(compile_, job, module):
    from ..llvm import ops as llvm_ops

    job.target.codegen.handle_module_pre_link(job, module)
    libraries = job.target.codegen.load_bitcode_files(job, module, compile_.options)
    for library in libraries:
        if not os.path.isfile(library.path):
            problem = "is not a regular file" if os.path.exists(library.path) else "does not exist"
            raise CompileError(f"bitcode library '{library.path}' {problem}", file=job.source, line=job.module.line,
                               fix=f"fix the {hint('link_libs')} / link=[...] path")
    compile_.linked([library.path for library in libraries])
    linked = llvm_ops.link(module, [library.as_args() for library in libraries])
    # A library may leave a function to another library its users link, and an ISA (PTX, AMDGCN or SPIR-V
    # assembly) to a device linker, as upstream's format=isa does; a binary is loaded as it is.
    if compile_.options.emit != LIBRARY and compile_.options.format != "isa":
        # A `func.func private` declaration lowers to a wrapper calling `_mlir_ciface_<name>`: named as written.
        missing = [name[len(_C_INTERFACE):] if name.startswith(_C_INTERFACE) else name
                   for name in llvm_ops.undefined_uses(linked, job.target.codegen.provided_elsewhere)]
        if missing:
            raise CompileError(f"module @{job.module.name} calls @{missing[0]}, which no linked library defines"
                               + (f" (nor {', '.join('@' + name for name in missing[1:])})" if missing[1:] else ""),
                               file=job.source, line=job.module.line,
                               fix=f"link the library that defines it ({hint('link_libs')}, or link = [...] in the "
                                   "target attribute), or define it in the module")
    return linked


_C_INTERFACE = "_mlir_ciface_"


def _opt(compile_, job, module):
    return job.target.codegen.optimize_module(job, module)


def _isa(compile_, job, module):
    return Assembly(job.target.codegen.translate_to_isa(job, module), module)


def _binary(compile_, job, assembly):
    return job.target.codegen.module_to_object(job, assembly, compile_.options, compile_.scratch)


def _bitcode(compile_, job, module):
    from ..llvm import ops as llvm_ops

    return llvm_ops.bitcode(module)


# What shapes each stage's output besides its input (the stage cache's keys). Every stage: this package, the
# LLVM builds the stages run in (llvmlite's, and the release `llc` the backend mode may run: mlirgpu.llvm.backend),
# the target, its attribute as written, the chip and O level; then per stage below.

# What a stage's stored output holds; raised when that changes (the binary stage began keeping its tools' log),
# so entries of an earlier layout are never restored as this one's.
OUTPUT_LAYOUT = 2


def machine_context(compile_, job):
    """What shapes every stage's output besides its input (a target's own stage starts its context with it)."""
    cpu, features = job.target.codegen.machine_cpu(job.attr)
    return [__version__, OUTPUT_LAYOUT, *_llvm_builds(compile_), job.target.name,
            job.attr.text, job.chip, job.opt_level, job.attr.triple, cpu, features]


def _llvm_builds(compile_):
    """llvmlite's identity and the backend's, asked once per compile: every stage of every job names them, and
    each asking looks for llvmlite's library and the release `llc` again (a tenth of a cached compile's CPU)."""
    if compile_.llvm_builds is None:
        compile_.llvm_builds = (toolchain.llvmlite_identity(), llvm_backend.identity())
    return compile_.llvm_builds


def _link_context(compile_, job):
    """The libraries the target may link for this job (their contents; which ones it links depends on the
    module, which is the input), in its order; and each library the build names for it that is not a file, so
    the link stage runs to say so instead of being restored from a compile that named none (as upstream's
    gpu-module-to-binary fails on a missing `l=` library whatever its cache)."""
    named = job.target.codegen.user_libraries(job.attr, compile_.options.link_libs)
    inputs = job.target.codegen.library_inputs(job, compile_.options)
    return machine_context(compile_, job) + [[path, toolchain.file_digest(path)] for path in inputs] + \
        [[path, None] for path in named if path and not os.path.isfile(path)]


def _binary_context(compile_, job):
    """The format, the serializer's options and the identities of its tools."""
    options = compile_.options
    return machine_context(compile_, job) + [options.format, options.opts] + \
        [toolchain.identity(tool) for tool in job.target.toolchain.tools(options)]


def _save_text(output):
    return str(output).encode("utf-8")


def _restore_text(payload):
    return payload.decode("utf-8")


def _restore_assembly(payload):
    return Assembly(payload.decode("utf-8"), None)


def _save_binaries(output):
    from ..cache.stagecache import pack

    return pack(output)


def _restore_binaries(payload):
    from ..cache.stagecache import unpack

    return unpack(payload)


def _same_bytes(output):
    return output


@dataclass(frozen=True)
class Stage:
    suffix: str  # the dump's suffix; for `binary`, the target names its files (binary_suffixes)
    run: object  # (compile, job, previous output) -> output
    upstream: str  # the counterpart in upstream's ModuleToObject, for the docs
    context: object  # (compile, job) -> list: what shapes the output besides the input
    save: object = _save_text  # output -> bytes, as the stage cache stores it (and its hash keys the next stage)
    restore: object = _restore_text  # bytes -> the output as later stages and dumps take it
    dumped: bool = True  # written into the dump folder (a library's bitcode is the compile's output instead)
    # Whether the next stage takes this stage's output; False for a stage that only writes a dump of its own
    # (a target's check or report): the next stage takes this one's input, and is keyed by that.
    feeds_next: bool = True


STAGES = (
    Stage("initial.ll", _initial, "translateToLLVMIR, setDataLayoutAndTriple", machine_context),
    Stage("linked.ll", _linked, "handleModulePreLink, loadBitcodeFiles, linkFiles", _link_context),
    Stage("opt.ll", _opt, "optimizeModule", machine_context),
    Stage("isa", _isa, "translateToISA", machine_context, restore=_restore_assembly),
    Stage("binary", _binary, "compileToBinary / moduleToObject", _binary_context, _save_binaries,
          _restore_binaries),
)
BINARY = "binary"
LIBRARY = "library"  # the `emit` value of library compiles
BITCODE = Stage("bc", _bitcode, "(a library: the linked module, as gpu-module-to-binary's l= files are)",
                machine_context, _same_bytes, _same_bytes, dumped=False)


def for_format(fmt, emit="object"):
    """The stages a job runs for output format `fmt` (no serializer for `isa`), or for a library (`emit`):
    the translation and the link, then the bitcode."""
    if emit == LIBRARY:
        return [stage for stage in STAGES if stage.suffix in ("initial.ll", "linked.ll")] + [BITCODE]
    return [stage for stage in STAGES if stage.suffix != BINARY or fmt != "isa"]


def for_target(target, fmt, emit="object"):
    """The stages a job of `target` runs: the shared table's for the format (for_format), as the target's
    `stages` hook returns them (with its own stages, where it adds some)."""
    return list(target.codegen.stages(for_format(fmt, emit)))


def binary_dumps(target, fmt):
    """The binary stage's files: the target's binaries for the format, and its tools' log where it keeps one."""
    return list(target.outputs.binary_suffixes(fmt)) + (["log"] if target.outputs.keeps_tool_log else [])


def dump_suffixes(target, fmt, emit="object"):
    """The dump suffixes one job writes, in stage order."""
    suffixes = []
    for stage in for_target(target, fmt, emit):
        if stage.dumped:
            suffixes += binary_dumps(target, fmt) if stage.suffix == BINARY else [stage.suffix]
    return suffixes
