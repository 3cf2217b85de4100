"""Reproduction: for every job and stage, the stock-tool commands (LLVM 22's `llc`, `llvm-link`, `opt`, the CUDA
toolkit's `ptxas` and `fatbinary`, `llvm-mc`, `ld.lld`) that remake that stage's dump from the previous stage's
dump, as IREE writes a reproducer into its dumps. They go into the record (`jobs[].repro`) and into
`repro.sh` in the dump folder, which runs the exact ones from inside the folder it lies in.

Exact, byte for byte (the tests prove it): the ISA from the optimized IR (`llc` with the target machine's CPU,
features and O level, without verbose comments, as MLIR's translateToISA sets it up), and the binaries from the
ISA (the serializer's own tool runs, `binary_commands`). Not exact, so written as comments: the linked IR
(mlirgpu links only what is needed, internalizes, and gives device-library definitions linkonce_odr linkage
first, which `llvm-link --only-needed --internalize` does not quite do) and the optimized IR (`opt` prints the
same code, but its module name and attribute-group numbering differ after a text round trip). The initial IR has
no stock command: it is mlir-translate's output for the gpu.module as cut from the source and amended by the
target, with the target machine's triple and data layout.
"""
import os
import re
import shlex

from . import stages, toolchain
from .mlirtext import printable
from .planning import container_dump, fat_container


def _name(options, job, suffix):
    return f"{options.dump_prefix}{job.stem}.{suffix}"


def commands(job, options):
    """[{"stage", "argv", "exact"}] for one job, in stage order."""
    cpu, features = job.target.machine_cpu(job.attr)
    machine = ([f"-mcpu={cpu}"] if cpu else []) + ([f"-mattr={features}"] if features else [])
    name = lambda suffix: _name(options, job, suffix)  # noqa: E731
    libraries = [path for path in job.target.library_inputs(job, options)]
    found = [
        {"stage": "linked.ll", "exact": False,
         "argv": [toolchain.command("llvm-link"), "-S", "--only-needed", "--internalize", name("initial.ll"),
                  *libraries, "-o", name("linked.ll")]},
        {"stage": "opt.ll", "exact": False,
         "argv": [toolchain.command("opt"), "-S", f"-O{job.opt_level}", *machine, name("linked.ll"), "-o",
                  name("opt.ll")]},
        {"stage": "isa", "exact": True,
         "argv": [toolchain.command("llc"), f"-O{job.opt_level}", *machine, "-asm-verbose=false", name("opt.ll"),
                  "-o", name("isa")]},
    ]
    if options.format != "isa":
        found += [{"stage": "binary", "exact": True, "argv": argv}
                  for argv, _what, _fix in job.target.binary_commands(job, options, "")]
    return found


def container_commands(modules, jobs, options, host_code):
    """{module name: [{"stage": "combine", "argv", "exact"}]} for the modules embedded as one fat container
    whose target makes it with a stock tool (a fatbin of several chips, say)."""
    found = {}
    for module in modules:
        mjobs = [job for job in jobs if job.module is module]
        container = fat_container([job.attr for job in mjobs], options, host_code)
        if container:
            name = options.dump_prefix + container_dump(module.name, container)
            found[module.name] = [{"stage": "combine", "exact": True, "argv": argv}
                                  for argv, _what, _fix in mjobs[0].target.combine_commands(mjobs, options, "", name)]
    return found


def _variable(tool):
    """The shell variable naming a tool in repro.sh: `llc-22` -> LLC, `ld.lld` -> LD_LLD."""
    return re.sub(r"\W", "_", re.sub(r"-\d+$", "", os.path.basename(tool))).upper()


def _command(argv):
    return " ".join([f'"${_variable(argv[0])}"'] + [shlex.quote(arg) for arg in argv[1:]])


def script(jobs, options, by_job, by_module=None):
    """The text of repro.sh: the exact commands, run from the folder the script is in; the others as
    comments. Each tool is a variable set to the compiling machine's tool unless already set (`PTXAS=...
    sh repro.sh` on another machine)."""
    entries = [entry for job in jobs for entry in by_job[job.id]] + \
        [entry for found in (by_module or {}).values() for entry in found]
    tools = {}
    for entry in entries:
        tools.setdefault(_variable(entry["argv"][0]), entry["argv"][0])
    lines = ["#!/bin/sh",
             "# Remakes this folder's stage dumps from the previous stage's dump with the stock tools, byte for byte",
             "# (written by mlirgpu; see its README, Reproduction). Lines starting with '# approx:' remake a stage",
             "# with the same code but not the same bytes; run them by hand. Set a tool's variable to use another.",
             "set -e", 'cd "$(dirname "$0")"']
    lines += [f'{name}="${{{name}:-{shlex.quote(path)}}}"' for name, path in sorted(tools.items())]
    for job in jobs:
        lines.append(f"# module @{printable(job.module.name)}: {job.target.name} {job.chip}, O{job.opt_level}")
        dumps = {_name(options, job, suffix) for suffix in stages.dump_suffixes(job.target, options.format)}
        between = []  # files a command writes that are no dumps (an object before linking): removed after
        for entry in by_job[job.id]:
            command = _command(entry["argv"])
            lines.append(command if entry["exact"] else f"# approx: {command}")
            argv = entry["argv"]
            written = [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in ("-o", "--create")]
            between += [name for name in written if entry["exact"] and name not in dumps]
        lines += [f"rm -f {shlex.quote(name)}" for name in between]
    for module, entries in (by_module or {}).items():
        if entries:
            lines.append(f"# module @{printable(module)}: its fat container")
            lines += [_command(entry["argv"]) for entry in entries]
    return "\n".join(lines) + "\n"
