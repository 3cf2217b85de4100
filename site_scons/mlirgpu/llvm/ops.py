"""LLVM work with llvmlite: the operations the stages are made of, and the host object.

These run in worker processes, never in a build tool's own process: llvmlite serialises all LLVM calls of a
process behind one lock, and an LLVM fatal error ends the process that hit it. A job's module is an
`LLVMModule` handed from stage to stage (parse, link, optimize, emit), so link, optimization and ISA emission see
exactly the module upstream's `ModuleToObject` would, with no text round trip between stages; nothing here knows
whether a stage's output is dumped (the pipeline prints a module only for a dump).

Every llvmlite object a job keeps between these calls (its contexts, modules and target machine) is
made in the job's arena (mlirgpu.llvm.arena), which closes them in a fixed order when the job ends, and what a
call makes only for itself is closed by a `with` before it returns: no LLVM object is ever freed by a finalizer,
in whatever order the garbage collector runs them.

Emulating upstream (see the shared reference notes): `Linker::linkInModule(lib, LinkOnlyNeeded, internalize)` is
reproduced with llvmlite's plain `link_in` by giving library definitions the destination does not declare
`linkonce_odr` linkage (so only referenced ones are pulled in, in order), then internalizing what was imported.
"""
import re

import llvmlite
import llvmlite.binding as llvm

from . import libraries as device_libraries
from . import arena as llvm_arena, isolation, optnone, structors, toolchain
from .arena import CONTEXT, MACHINE, MODULE
from ..errors import CompileError

_LOCAL = {"internal", "private"}
_KEEP_LINKAGE = _LOCAL | {"appending", "linkonce_odr", "linkonce_any"}
HOST_TRIPLE = "x86_64-unknown-linux-gnu"


def _initialize():
    """LLVM's targets and the options our stages rely on, and the pairing check: done when a process first
    imports this module (a worker's boot, or, in a worker forked from a build's zygote, which has no LLVM, its
    first compile that runs a stage)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_asmparser()
    # Bitcode we write and re-read (cleaned libraries) keeps its use-lists, so nothing differs from upstream.
    llvm.set_option("mlirgpu", "-preserve-bc-uselistorder")
    # Upstream's optimizer has no OptNoneInstrumentation: optimize `optnone` functions too (see optnone.py).
    optnone.run_passes_on_optnone_functions(llvm.ffi.lib._name)
    expected = toolchain.expected_llvm_major()
    if llvm.llvm_version_info[0] != expected:
        raise CompileError(f"llvmlite {llvmlite.__version__} bundles LLVM {llvm.llvm_version_info[0]}, but the MLIR "
                           f"tools are LLVM {expected}: install the llvmlite release pinned in pyproject.toml")


_initialize()


def _own(kind, obj):
    return llvm_arena.current().own(kind, obj)


def _listed(iterator):
    """The values of a llvmlite iterator, which is closed here."""
    with iterator:
        return list(iterator)


def _functions(module):
    return _listed(module.functions)


def _global_variables(module):
    return _listed(module.global_variables)


def _link_in(module, other):
    """Link `other` into `module`; `other` is consumed (marked so, as llvmlite's link does): never closed again."""
    try:
        module.link_in(other)
    finally:
        other.detach()


class LLVMModule:
    """A job's LLVM module between stages, with its context and the target machine of its chip (all three owned
    by the job's arena), and whether it may hold aliases or ifuncs (`indirect`: llvmlite cannot list those)."""

    def __init__(self, module, context, machine, indirect):
        self.module = module
        self.context = context
        self.machine = machine
        self.indirect = indirect

    def __str__(self):
        return str(self.module)


def parse(llvm_ir, triple, chip, features, opt_level):
    """Stage `initial.ll`: parse the translated module, set its triple and data layout from the target machine."""
    context = _own(CONTEXT, llvm.create_context())
    module = _own(MODULE, llvm.parse_assembly(llvm_ir, context=context))
    machine = _own(MACHINE, llvm.Target.from_triple(triple).create_target_machine(
        cpu=chip, features=features, opt=opt_level, reloc="default", codemodel="default"))
    _set_layout(module, machine)
    module.triple = machine.triple
    return LLVMModule(module, context, machine, " alias " in llvm_ir or " ifunc " in llvm_ir)


def _set_layout(module, machine):
    with machine.target_data as data:
        module.data_layout = str(data)


def parse_checked(llvm_ir):
    """An LLVM module parsed from text and verified (RuntimeError with LLVM's message if it is not valid IR)."""
    module = _own(MODULE, llvm.parse_assembly(llvm_ir, context=_own(CONTEXT, llvm.create_context())))
    module.verify()
    return module


def defines(module, name):
    """Whether `module` defines (not only declares) the function `name`."""
    try:
        return not module.get_function(name).is_declaration
    except NameError:
        return False


def declared_functions(job_module):
    """Names of functions the module declares with external linkage but does not define (what device libraries
    may provide; `extern_weak` declarations do not ask for a library, as upstream's check of external linkage)."""
    return sorted(f.name for f in _functions(job_module.module) if f.is_declaration and f.linkage.name == "external")


def undefined_uses(job_module, provided_elsewhere):
    """Names of the functions the module uses but only declares (external linkage, no LLVM intrinsic), other
    than those `provided_elsewhere(name)` says a later tool or the runtime provides: after the link stage,
    what no library defined. The module is printed only when there is such a declaration."""
    module = job_module.module
    declared = {f.name for f in _functions(module) if f.is_declaration and f.linkage.name == "external"
                and not f.name.startswith("llvm.") and not provided_elsewhere(f.name)}
    if not declared:
        return []
    used = set()
    for line in str(module).splitlines():
        if not line.startswith("declare "):
            used.update(_NAME.findall(line))
    return sorted(declared & used)


_NAME = re.compile(r"@([\w.$\-]+)")


def add_control_constants(job_module, constants, flags):
    """Pre-link primitive: append constants `(name, bits, value, align)` and module flags.

    The constants are `linkonce_odr protected local_unnamed_addr addrspace(4)`, as upstream's pre-link step
    creates them (a target's `pre_link` hook says which); names the module already has are skipped.
    """
    module = job_module.module
    existing = {g.name for g in _global_variables(module)}
    lines = [f'target datalayout = "{module.data_layout}"', f'target triple = "{module.triple}"']
    added = []
    for name, bits, value, align in constants:
        if name in existing:
            continue
        lines.append(f"@{name} = protected local_unnamed_addr addrspace(4) constant i{bits} {value}, align {align}")
        added.append(name)
    if flags:
        refs = ", ".join(f"!{i}" for i in range(len(flags)))
        lines.append(f"!llvm.module.flags = !{{{refs}}}")
        for i, (behaviour, key, value) in enumerate(flags):
            lines.append(f'!{i} = !{{i32 {behaviour}, !"{key}", i32 {value}}}')
    with llvm.parse_assembly("\n".join(lines) + "\n", context=job_module.context) as extra:
        _link_in(module, extra)
    for name in added:
        module.get_global_variable(name).linkage = "linkonce_odr"


def _definitions(module):
    for value in _functions(module) + _global_variables(module):
        if not value.is_declaration:
            yield value


def _definition(module, name):
    """The function or global variable `name` defined in `module`, or None (looked up, not iterated: modules
    with a device library linked in hold hundreds of values)."""
    for lookup in (module.get_function, module.get_global_variable):
        try:
            value = lookup(name)
        except NameError:
            continue
        return None if value.is_declaration else value
    return None


def link(job_module, libraries):
    """Stage `linked.ll`: link each library `(path, strip_named, retarget)` only-needed, then internalize (each
    library as its plan gives it for this module: see mlirgpu.llvm.libraries.Plan)."""
    module = job_module.module
    for path, strip_named, retarget in libraries:
        values = _functions(module) + _global_variables(module)
        declared = {value.name for value in values if value.is_declaration}
        try:
            plan = device_libraries.link_plan(path, strip_named, module.triple if retarget else None,
                                              module.data_layout if retarget else None, declared)
            bitcode = plan.bitcode(None if job_module.indirect else {value.name for value in values})
            library = llvm.parse_bitcode(bitcode, context=job_module.context)
        except (RuntimeError, OSError) as exc:
            raise RuntimeError(f"cannot read bitcode library '{path}': {str(exc).strip()}") from exc
        with library:
            _link_library(module, library, declared)
        job_module.indirect = job_module.indirect or plan.indirect
    return job_module


def _link_library(module, library, declared):
    """Link `library` (consumed) into `module` only-needed, then internalize what it brought."""
    imported = []
    for value in _definitions(library):
        imported.append(value.name)
        if str(value.linkage.name) not in _KEEP_LINKAGE and value.name not in declared:
            value.linkage = "linkonce_odr"
    # A local definition of the destination owns no name: the linker renames it, and the library's is imported
    # (and internalized) under the name, as upstream's `func.func private` declarations lowered to wrappers are.
    defined_before = {name for name in imported if _definition(module, name) is not None
                      and _definition(module, name).linkage.name not in _LOCAL}
    _link_in(module, library)
    for name in imported:
        value = None if name in defined_before else _definition(module, name)
        if value is not None and value.linkage.name not in _LOCAL and value.linkage.name != "appending":
            value.linkage = "internal"
            value.visibility = "default"


def bitcode(job_module):
    """A library's `bc` stage: the linked module as bitcode (with its use-list order, as every bitcode we write)."""
    return job_module.module.as_bitcode()


def joined_bitcode(parts):
    """One bitcode module of the bitcode modules `parts` linked whole, in order (a library's gpu.modules of one
    target and chip); a symbol two of them define is LLVM's error (a RuntimeError)."""
    with llvm_arena.Arena():
        context = _own(CONTEXT, llvm.create_context())
        module = _own(MODULE, llvm.parse_bitcode(parts[0], context=context))
        for part in parts[1:]:
            _link_in(module, llvm.parse_bitcode(part, context=context))
        return module.as_bitcode()


def optimize(job_module, opt_level):
    """Stage `opt.ll`: LLVM's default per-module pipeline at O<opt_level>, as MLIR's OptUtils builds it."""
    with llvm.create_pipeline_tuning_options(speed_level=opt_level) as tuning:
        tuning.loop_unrolling = True
        tuning.loop_interleaving = True
        tuning.loop_vectorization = True
        tuning.slp_vectorization = True
        with llvm.create_pass_builder(job_module.machine, tuning) as builder, \
                builder.getModulePassManager() as passes:
            passes.run(job_module.module, builder)
    return job_module


def emit_assembly(job_module, isolated=False):
    """Stage `isa`: the target's assembly (PTX, AMDGCN, SPIR-V text) from the optimized module.

    `isolated` (a target's `isolated_codegen`): code generation runs where the job's runner isolates work
    (mlirgpu.llvm.isolation: the forked runners compute it in a forked child of this worker, which starts from
    the worker's state before any code generation and leaves the module untouched for a second emission, the
    binary). LLVM 22's SPIR-V back end needs both: it rewrites the IR it compiles, and keeps module
    state in a static (`SPIRVModuleAnalysis::MAI`, llvm/llvm-project#160613) whose `BBNumToRegMap`, keyed by
    MachineFunction addresses, is never cleared, so a second module compiled in one process may reuse a stale
    label id and come out renumbered or invalid ("Id N is defined more than once")."""
    if isolated:
        return isolation.isolated(lambda: job_module.machine.emit_assembly(job_module.module), "emitting the ISA")
    return job_module.machine.emit_assembly(job_module.module)


def emit_object(job_module, isolated=False):
    """The target's object file from the optimized module (a SPIR-V binary, for instance); `isolated` as for
    `emit_assembly`."""
    if isolated:
        return isolation.isolated(lambda: job_module.machine.emit_object(job_module.module), "emitting the binary")
    return job_module.machine.emit_object(job_module.module)


def object_from_ir(ir_text, triple=HOST_TRIPLE):
    """A position-independent ELF relocatable object from host LLVM IR (built by mlirgpu.pipeline.embed); its LLVM objects
    are closed before it returns."""
    with llvm_arena.Arena():
        context = _own(CONTEXT, llvm.create_context())
        module = _own(MODULE, llvm.parse_assembly(structors.in_array_sections(ir_text), context=context))
        machine = _own(MACHINE, llvm.Target.from_triple(triple).create_target_machine(reloc="pic",
                                                                                      codemodel="default"))
        _set_layout(module, machine)
        module.triple = triple
        if "@llvm.coro." in ir_text:  # async host code (coroutines): split them first, as LLVM's O0 pipeline does
            with llvm.create_pipeline_tuning_options(speed_level=0) as tuning, \
                    llvm.create_pass_builder(machine, tuning) as builder, builder.getModulePassManager() as passes:
                passes.run(module, builder)
        return machine.emit_object(module)
