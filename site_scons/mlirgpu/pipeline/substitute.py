"""Substitutes: hand-edited stage outputs that replace what a stage would make (`--substitute DIR`,
`GPU_SUBSTITUTE`). A file in DIR named like a dump of a job (`<stem>.linked.ll`, `<stem>.opt.ll`, `<stem>.isa`,
the embedded binary `<stem>.cubin` / `.fatbin` / `.hsaco` / `.spv`, with the dump prefix) is that stage's
output for that job, and the later stages run from it, as IREE's substitution does for whole executables and
Triton's override directory for some stages, here for every stage.

A substitute is checked before use against what the job is: LLVM IR must parse, carry the job's triple (or
none) and define every kernel of the module; an ISA must name the job's chip and every kernel; a binary must be
of its kind (ELF, fatbin, SPIR-V) and name every kernel. Anything else is an error naming the file. The stage
cache never stores a substituted stage; the stages after it are keyed by the substitute's bytes, as by any
input.
"""
import os
import re

from ..errors import CompileError
from ..util.fsutil import read_input
from .stages import BINARY, Assembly

_MAGIC = {"cubin": b"\x7fELF", "hsaco": b"\x7fELF", "fatbin": (0xBA55ED50).to_bytes(4, "little"),
          "spv": (0x07230203).to_bytes(4, "little")}


def available(folder):
    """{name: path} of what the substitute folder holds (checked by planning: it exists). A name no job's dump
    has is never looked at; one that is, but is no regular file (a folder, say), is an error when its job runs."""
    if not folder:
        return {}
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise CompileError(f"cannot read the substitute folder '{folder}': {exc.strerror}",
                           fix="name an existing folder of substitutes") from None
    return {name: os.path.join(folder, name) for name in names}


def names_for(job, stage_suffix, options):
    """The substitute file names of one stage of `job`: (name, binary suffix or None)."""
    prefix = options.dump_prefix
    if stage_suffix != BINARY:
        return [(f"{prefix}{job.stem}.{stage_suffix}", None)]
    embedded = job.target.outputs.binary_suffixes(options.format)
    return [(f"{prefix}{job.stem}.{suffix}", suffix) for suffix in embedded]


def kernel_names(job, llvm_ir):
    """The kernels the translated module defines (a substitute must keep every one)."""
    convention = re.escape(job.target.codegen.kernel_convention)
    return re.findall(rf'^define (?:[\w\s]+ )?{convention} [^@]*@("(?:[^"\\]|\\.)*"|[-\w$.]+)\(', llvm_ir, re.M)


def _fail(path, why, fix):
    raise CompileError(f"substitute '{path}': {why}", file=path, fix=fix)


def _read(path):
    """A substitute's bytes: a regular file, else an error naming it."""
    if not os.path.isfile(path):
        kind = "a folder" if os.path.isdir(path) else "a link to nothing" if os.path.islink(path) else \
            "not a regular file"
        _fail(path, f"it is {kind}, named like a dump", "put the edited dump there as a file, or remove it")
    return read_input(path)


def load_ir(job, path, kernels):
    """An LLVM IR substitute, parsed as the stage's output (the job's target machine)."""
    from ..llvm import ops as llvm_ops

    text = _read(path).decode("utf-8", "replace")
    try:
        module = llvm_ops.parse_checked(text)
    except RuntimeError as exc:
        _fail(path, f"not valid LLVM IR: {str(exc).strip().splitlines()[0][:300]}",
              "substitute a file made from the dump of the same name")
    attr = job.attr
    if module.triple and module.triple != attr.triple:
        _fail(path, f"its triple is {module.triple}, the job's is {attr.triple}",
              f"substitute LLVM IR for {attr.triple} (edit a dump of this job)")
    missing = [name for name in kernels if not llvm_ops.defines(module, name.strip('"'))]
    if missing:
        _fail(path, f"kernel {missing[0]} of module @{job.module.name} is not defined in it",
              "keep every kernel of the module")
    cpu, features = job.target.codegen.machine_cpu(attr)
    return llvm_ops.parse(text, attr.triple, cpu, features, attr.opt_level)


def load_isa(job, path, kernels):
    text = _read(path).decode("utf-8", "replace")
    if not job.target.outputs.assembles_from_text:
        _fail(path, f"{job.target.name} makes its binary from the optimized module, not from its ISA text",
              f"substitute {job.stem}.opt.ll instead")
    chip = job.target.outputs.assembly_chip(text)
    if chip != job.chip:
        _fail(path, f"it is ISA for {chip or 'no chip it names'}, the job's chip is {job.chip}",
              f"substitute the ISA of this job ({job.stem}.isa of its dumps)")
    missing = [name for name in kernels if name.strip('"') not in text]
    if missing:
        _fail(path, f"kernel {missing[0]} of module @{job.module.name} is not in it", "keep every kernel of the module")
    return Assembly(text, None)


def load_binary(job, path, suffix, kernels, options):
    data = _read(path)
    if suffix != job.target.outputs.binary_suffixes(options.format)[-1]:
        embedded = job.target.outputs.binary_suffixes(options.format)[-1]
        _fail(path, f"the .{suffix} is not what this build embeds (the .{embedded})",
              f"substitute {job.stem}.{embedded}, or the .isa")
    if not data.startswith(_MAGIC.get(suffix, b"")):
        _fail(path, f"it is not a {suffix} file", f"substitute a .{suffix} made for chip {job.chip}")
    missing = [name for name in kernels if name.strip('"').encode("utf-8") not in data]
    if missing:
        _fail(path, f"kernel {missing[0]} of module @{job.module.name} is not in it", "keep every kernel of the module")
    return data
