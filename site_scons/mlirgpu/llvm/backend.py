"""Which LLVM build runs a stage: llvmlite's, in this process, or Debian's release `llc-22`, as a process.

llvmlite's LLVM is built with assertions on, so its code generation costs more than a release build's; a tool
process costs its start-up (loading libLLVM) and the module's bitcode round trip. Measured per stage and size
(bench/backends.py, bench/README.md "Per-stage backend"), the release `llc` wins the ISA stage of modules from
some size on, and by a target's own margin (AMDGCN code generation is the dearest per byte): those go to `llc`,
the rest stay in process. `$MLIRGPU_LLVM_BACKEND` forces one way: `inprocess` or `tools` (default `auto`).

Only the ISA stage has the choice. `llc` with the target machine's CPU, features and O level and no verbose
comments makes upstream's bytes (the same command repro.sh runs; tests/identity/test_upstream_identity.py checks both
ways). The O3 pipeline stays in process: `opt` on the module's bitcode prints the same code, but its output
read back differs from the stage's in intrinsic declarations' attributes (`mustprogress`; the release tools are
LLVM 22.1.8, llvmlite's LLVM 22.1.0), so the `opt.ll` dumps and every later stage key would change with the choice. The link
stage stays too: `llvm-link --only-needed --internalize` is not the link upstream makes (see
mlirgpu.pipeline.repro).

Which tool file runs is part of every stage's cache key (`identity`), beside llvmlite's own identity.
"""
from . import toolchain
from ..errors import CompileError, ToolMissing
from ..util import environment

INPROCESS, TOOLS, AUTO = "inprocess", "tools", "auto"
MODES = (AUTO, INPROCESS, TOOLS)

# Bitcode bytes of the optimized module from which the release `llc` generates its ISA in less CPU time than
# llvmlite's LLVM, per architecture of the target triple (bench/backends.py); absent: always in process.
CODEGEN_FROM = {"nvptx64": 16 << 10, "amdgcn": 8 << 10}


def mode(environ=None):
    """`$MLIRGPU_LLVM_BACKEND`: auto (the default), inprocess or tools; anything else is an error naming it."""
    chosen = (environment.value("MLIRGPU_LLVM_BACKEND", environ) or AUTO).lower()
    if chosen not in MODES:
        raise CompileError(f"MLIRGPU_LLVM_BACKEND='{chosen[:40]}' is not one of {', '.join(MODES)}",
                           fix=f"set it to {' or '.join(MODES)}, or unset it")
    return chosen


def _llc(chosen):
    """The release `llc` the mode may run, or None: in auto mode a missing one leaves every module in process."""
    if chosen == INPROCESS:
        return None
    try:
        return toolchain.llvm_tool("llc")
    except ToolMissing:
        if chosen == TOOLS:
            raise
        return None


def tools():
    """The release tools the mode may run for a module's ISA: files a build tool makes dependencies of every
    object, whether or not a module of it was large enough or the stage cache served its ISA."""
    llc = _llc(mode())
    return [llc] if llc else []


def may_run_llc():
    """Whether a module's ISA may come from the release `llc` (the mode allows it and one is found)."""
    try:
        return bool(tools())
    except CompileError:  # a bad mode or a missing llc under `tools`: the compile says so
        return False


def identity():
    """What of the LLVM builds shapes a stage's output besides llvmlite (whose identity the keys hold too): the
    mode, the thresholds it applies, and the identity of the `llc` file it may run."""
    chosen = mode()
    llc = _llc(chosen)
    return [chosen, sorted(CODEGEN_FROM.items()) if chosen == AUTO else [],
            toolchain.identity(llc) if llc else None]


def codegen_flags(opt_level, cpu, features):
    """`llc`'s options for the target machine the stages build (ops.parse): O level, CPU, features, no verbose
    comments in the assembly (as MLIR's translateToISA)."""
    return [f"-O{opt_level}"] + ([f"-mcpu={cpu}"] if cpu else []) + ([f"-mattr={features}"] if features else []) \
        + ["-asm-verbose=false"]


def emit_assembly(job_module, opt_level, cpu, features, isolated=False):
    """The `isa` stage: the target's assembly from the optimized module, by llvmlite in process
    (mlirgpu.llvm.ops.emit_assembly, `isolated` as there) or by the release `llc` from the module's bitcode, as
    the mode and that bitcode's size choose. An `llc` that fails is LLVM's error, as one in process is."""
    from . import ops
    from .process import run

    chosen = mode()
    llc = _llc(chosen)
    if llc is None:
        return ops.emit_assembly(job_module, isolated)
    threshold = CODEGEN_FROM.get(job_module.module.triple.split("-", 1)[0])
    if chosen == AUTO and threshold is None:
        return ops.emit_assembly(job_module, isolated)
    bitcode = job_module.module.as_bitcode()  # the size auto mode goes by, and what `llc` reads
    if chosen == AUTO and len(bitcode) < threshold:
        return ops.emit_assembly(job_module, isolated)
    result = run([llc, *codegen_flags(opt_level, cpu, features), "-", "-o", "-"], "emitting the ISA", input=bitcode)
    if result.returncode != 0:
        said = result.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError(f"llc failed (exit status {result.returncode})" + (f": {said}" if said else ""))
    return result.stdout.decode("utf-8")
