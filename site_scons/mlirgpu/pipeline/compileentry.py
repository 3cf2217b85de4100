"""Compile entries: the middle of a compile (translation, every job's stages, the embedded binaries, the host
object) kept as one entry of the stage cache, so a compile whose inputs all match an earlier one, here or on a
teammate's machine (the remote tier), reads one entry and runs no tool and no LLVM stage, as ccache's direct
mode does for C.

The per-stage entries already skip every stage whose input is known, but a compile that finds all of them still
translates each module (or looks its translation up), looks up each stage in turn (a round trip each to a remote
cache), assembles its binaries and emits its host object. The compile entry's key is made of what the stage
keys and those steps depend on:

    the text of every module as it is translated, and mlir-translate's identity
    each job's plan (id, names) and each of its stages' context (this package, llvmlite's LLVM, the target, its
        attribute, the libraries it may link with their contents, the serializer's options and tools)
    the identities of every tool of the jobs' targets (fat containers are made with them)
    the options, except where outputs go (dumps, header, depfile)
    the host code (the file's text around its modules) and the file's name, which the host object carries

What a compile writes around the middle (the dumps, the record, repro.sh, the header, the depfile) is written
from this compile's own paths, as on a miss, so an entry made in one checkout serves another. An entry is one
sealed blob of the stage cache (its hash checked on every read: a damaged one is a miss).
"""
import dataclasses
import json
import os
import struct

from ..cache import stagecache
from . import stages
from ..llvm import toolchain
from .embed import Embedded
from ..version import __version__

# What an entry holds; raised when that changes, so entries of an earlier layout are never read as this one's
# (2: host objects' constructors in .init_array, mlirgpu.llvm.structors).
LAYOUT = 2
_WHERE_OUTPUTS_GO = ("dump_dir", "dump_prefix", "header", "depfile")


@dataclasses.dataclass
class Entry:
    payloads: list  # per job, in plan order: {stage suffix: the stage's stored output}
    embedded: list  # embed.Embedded, as placed in the object
    absent: list  # names of the modules without kernels (a warning each)
    object_bytes: bytes
    host: str  # the host LLVM IR (a dump), or None without host code


def key(compile_, loaded, jobs, source):
    """The entry's key for the compile of `loaded` (its modules as they will be translated) planned as `jobs`."""
    options = compile_.options
    chosen = {name: value for name, value in dataclasses.asdict(options).items() if name not in _WHERE_OUTPUTS_GO}
    targets = {job.target.name: job.target for job in jobs}
    return stagecache.key(
        "compile", LAYOUT, __version__, toolchain.llvmlite_identity(),
        toolchain.identity(toolchain.llvm_tool("mlir-translate")), os.path.basename(source), chosen,
        loaded.container,
        [[module.name, module.text, module.handler, [attr.text for attr in module.targets]] for module in loaded.modules],
        [[job.id, job.module.name, job.stem, job.symbol, [stage.context(compile_, job) for stage in stages.for_target(job.target, options.format)]]
         for job in jobs],
        [[name, [toolchain.identity(tool) for tool in target.toolchain.tools(options)]]
         for name, target in sorted(targets.items())])


def pack(jobs, payloads, embedded, absent, object_bytes, host):
    """The entry of a compile: `payloads` {job id: {stage suffix: stored output}} of every job."""
    meta = {"jobs": [[job.id, sorted(payloads[job.id])] for job in jobs],
            "embedded": [[item.name, item.module, item.target.name, list(item.chips), item.format] for item in embedded],
            "absent": absent, "host": host is not None}
    named = {"meta": json.dumps(meta).encode("utf-8"), "object": object_bytes}
    if host is not None:
        named["host"] = host.encode("utf-8")
    for index, job in enumerate(jobs):
        for suffix, payload in payloads[job.id].items():
            named[f"job{index}.{suffix}"] = payload
    for index, item in enumerate(embedded):
        named[f"embedded{index}"] = item.data
    return stagecache.pack(named)


def unpack(payload, jobs, fmt):
    """The Entry in `payload` for a compile planned as `jobs` in format `fmt`, or None when it does not fit them
    (a key of the same parts must give the same plan; this keeps a mistake from becoming a wrong output)."""
    try:
        named = stagecache.unpack(payload)
        meta = json.loads(named["meta"])
        suffixes = [sorted(stage.suffix for stage in stages.for_target(job.target, fmt)) for job in jobs]
        if meta["jobs"] != [[job.id, mine] for job, mine in zip(jobs, suffixes)]:
            return None
        targets = {job.target.name: job.target for job in jobs}
        embedded = [Embedded(name, module, targets[target], tuple(chips), form, named[f"embedded{index}"])
                    for index, (name, module, target, chips, form) in enumerate(meta["embedded"])]
        return Entry([{suffix: named[f"job{index}.{suffix}"] for suffix in mine} for index, mine in enumerate(suffixes)],
                     embedded, list(meta["absent"]), named["object"],
                     named["host"].decode("utf-8") if meta["host"] else None)
    except (KeyError, ValueError, TypeError, struct.error):
        return None
