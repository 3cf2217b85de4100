"""The host object: which binaries a compile embeds, and the x86-64 object that carries them.

As upstream: per gpu.module one fat container where its target makes one for its chips (or the layout needs
one), else one binary per (module, target); with host code only the object `#gpu.select_object` picks, and the
host code translated with each gpu.module replaced by a `gpu.binary` holding our bytes, so MLIR's launch glue
loads them (translated in the modules' run with markers for the bytes, then patched:
mlirgpu.pipeline.hostplaceholder; where that cannot be shown exact, translated here once the binaries exist).
The object's LLVM IR comes from mlirgpu.pipeline.embed; without host code the object is
written directly (mlirgpu.pipeline.elfobject), the same bytes.
"""
import os
import re
import time

from . import elfobject, embed, hostplaceholder, lowering, spool
from . import source as sources
from .embed import Embedded
from .gpubinary import binary_ops
from .planning import container_dump, fat_container
from ..compile_options import hint
from ..llvm.mlirtools import run_mlir_tool
from ..util.naming import c_name


def job_bytes(job, output, fmt):
    """What upstream embeds for one job: the target's assembly object plus the NUL SelectObject adds, or the
    target's binary for the format."""
    if fmt == "isa":
        return job.target.outputs.assembly_object(output.assembly.text) + b"\0"
    return output.binaries[job.target.outputs.binary_suffixes(fmt)[-1]]


def embeddings(compile_, source, jobs, outputs, dumps):
    """The binaries of the host object: per module one fat container when its target makes one for its chips
    (or the layout needs one), else one per (module, target); a job's bytes that a runner spooled are the
    spool's reference to them (mlirgpu.pipeline.spool)."""
    options = compile_.options
    embedded = []
    by_module = {}  # grouped once: a search of every job per module is 1.5 s of CPU at 10,000 modules
    for job in jobs:
        by_module.setdefault(id(job.module), []).append(job)
    for module in source.modules:
        mjobs = by_module.get(id(module), [])
        container = fat_container([job.attr for job in mjobs], options, source.has_host_code)
        if container:
            target = mjobs[0].target
            started = time.perf_counter()
            data = target.outputs.combine(mjobs, [outputs[job.id].binaries for job in mjobs],
                                  [outputs[job.id].assembly for job in mjobs], options, compile_.scratch)
            compile_.timed("combine", started)
            if dumps:
                dumps.write(container_dump(module.name, container), data)
            embedded.append(Embedded(options.symbol_prefix + c_name(module.name), module.name, target,
                                     tuple(job.chip for job in mjobs), target.outputs.embeds_fat_as, data))
            continue
        if source.has_host_code:  # as upstream's #gpu.select_object: one target's object per module
            index = _selected_index(module)
            mjobs = [mjobs[min(index, len(mjobs) - 1)]]
        for job in mjobs:
            spooled = compile_.spooled.get(job.id)
            name = options.symbol_prefix + (c_name(module.name) if source.has_host_code else job.symbol)
            embedded.append(Embedded(name, module.name, job.target, (job.chip,),
                                     job.target.outputs.embedded_format(options.format),
                                     job_bytes(job, outputs[job.id], options.format) if spooled is None else spooled))
    return embedded


def _selected_index(module):
    match = re.search(r"select_object<(\d+)", module.handler)
    return int(match.group(1)) if match else 0


def object_bytes(job, output, fmt):
    """A job's bytes as its `#gpu.object` in a gpu.binary holds them: for an assembly object without the NUL
    that the host translation adds."""
    data = job_bytes(job, output, fmt)
    return data[:-1] if fmt == "isa" else data


def translate_host(source, jobs, outputs, options, placeholder=None, translated=None):
    """Host LLVM IR, as mlir-translate gives it for the host code with each gpu.module replaced by a gpu.binary
    holding our objects: `translated` (the LLVM IR of `placeholder`, a hostplaceholder.Placeholder made in the
    device modules' run) patched with the binaries where the patch is exact, else a translation of its own."""
    data_of = lambda job: object_bytes(job, outputs[job.id], options.format)  # noqa: E731
    if translated is not None:
        host = hostplaceholder.patched(translated, placeholder, data_of, len(source.modules))
        if host is not None:
            return host
    container = sources.replace_modules(source.container, binary_ops(source, jobs, data_of, options))
    if source.host_passes:  # the rest of the user's pipeline, as upstream runs it after serializing
        container = run_mlir_tool("mlir-opt", ["-", f"--pass-pipeline={source.host_passes}",
                                               "--mlir-print-local-scope", "--mlir-print-debuginfo"], source.path,
                                  "lowering host code (--lowering, after gpu-module-to-binary)", text=container)
        sources.check_host(container, source.path, lowering.canonical(options.lowering), serialized=True)
    return run_mlir_tool("mlir-translate", ["--mlir-to-llvmir", "-"], source.path, "translating host code",
                         text=container, fix=f"set {hint('host_code', 'ignore')} to embed only the binaries")


def host_object(compile_, binaries, host):
    """The host object: the binaries, with MLIR's launch glue when the file has host code (`host`: its
    translated LLVM IR); without host code written directly (mlirgpu.pipeline.elfobject), LLVM's object
    for the same IR. Its bytes, or where binaries were spooled its spool.ObjectParts (copied from the spool
    as it is written)."""
    from ..llvm.ops import object_from_ir

    options, source_name = compile_.options, os.path.basename(compile_.source)
    compile_.report(f"{compile_.source}: host object", (compile_.source, None))
    if host is not None:
        return object_from_ir(embed.host_ir_with_glue(host, binaries, source_name))
    if elfobject.writes(binaries, options.layout, options.section, source_name):
        parts = elfobject.host_object_parts(binaries, options.layout, options.section, source_name)
        return spool.ObjectParts(parts) if compile_.spooled else b"".join(parts)
    return object_from_ir(embed.host_ir(spool.materialized(binaries), options.layout, options.section, source_name))
