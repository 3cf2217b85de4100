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

A substituted stage (`--substitute`) is never remade: its dump is the substitute as the build used it, and the
later stages run from it, so the script makes what was embedded, and says so as it runs. Every path and value in
the script is quoted, and no comment holds a character that could end it (a newline in a library's path would
run the rest of the line): a hostile folder name stays text, never code.
"""
import os
import re
import shlex

from . import stages
from ..llvm import backend, toolchain
from ..util.mlirtext import printable
from .planning import REPRO_DUMP, container_dump, fat_container


def _operand(name):
    """A file name as a tool's argument: `./` before one starting with `-` (a dump prefix may), which a tool would
    read as an option."""
    return "./" + name if name.startswith("-") else name


def _name(options, job, suffix):
    return _operand(f"{options.dump_prefix}{job.stem}.{suffix}")


def _folder(options):
    """The folder the targets' commands name the dumps in: `.` where the dump prefix starts with `-`."""
    return "." if options.dump_prefix.startswith("-") else ""


def commands(job, options):
    """[{"stage", "argv", "exact"}] for one job, in stage order."""
    cpu, features = job.target.codegen.machine_cpu(job.attr)
    machine = ([f"-mcpu={cpu}"] if cpu else []) + ([f"-mattr={features}"] if features else [])
    name = lambda suffix: _name(options, job, suffix)  # noqa: E731
    libraries = [_operand(path) for path in job.target.codegen.library_inputs(job, options)]
    found = [
        {"stage": "linked.ll", "exact": False,
         "argv": [toolchain.command("llvm-link"), "-S", "--only-needed", "--internalize", name("initial.ll"),
                  *libraries, "-o", name("linked.ll")]},
        {"stage": "opt.ll", "exact": False,
         "argv": [toolchain.command("opt"), "-S", f"-O{job.opt_level}", *machine, name("linked.ll"), "-o",
                  name("opt.ll")]},
        {"stage": "isa", "exact": True,
         "argv": [toolchain.command("llc"), *backend.codegen_flags(job.opt_level, cpu, features), name("opt.ll"),
                  "-o", name("isa")]},
    ]
    if options.format != "isa":
        found += [{"stage": "binary", "exact": True, "argv": argv}
                  for argv, _what, _fix in job.target.codegen.binary_commands(job, options, _folder(options))]
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
            found[module.name] = [{"stage": "combine", "exact": True, "argv": argv} for argv, _what, _fix
                                  in mjobs[0].target.outputs.combine_commands(mjobs, options, _folder(options), name)]
    return found


def _variable(tool):
    """The shell variable naming a tool in repro.sh: `llc-22` -> LLC, `ld.lld` -> LD_LLD."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", re.sub(r"-\d+$", "", os.path.basename(tool))).upper()
    return name if re.match(r"[A-Z_]", name) else "_" + name


def _one_line(arg):
    """`arg` quoted on one line: shlex's quoting, or bash's `$'...'` for one holding a control character (a
    command written as a comment must not be ended by a newline in it)."""
    if not re.search(r"[\x00-\x1f\x7f]", arg):
        return shlex.quote(arg)
    escaped = "".join(f"\\x{ord(ch):02x}" if ord(ch) < 0x20 or ord(ch) == 0x7F else "\\" + ch if ch in "\\'" else ch
                      for ch in arg)
    return f"$'{escaped}'"


def _command(argv, quote=shlex.quote):
    return " ".join([f'"${_variable(argv[0])}"'] + [quote(arg) for arg in argv[1:]])


def _comment(text):
    """A comment line: printable ASCII only, so nothing in a value can end it."""
    return "# " + printable(text)


def _say(text, error=False):
    """A line the script prints (printf, not echo, which some shells read backslashes in)."""
    return f"printf '%s\\n' {shlex.quote(printable(text))}" + (" >&2" if error else "")


def _written(argv):
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in ("-o", "--create")]


def _still_run(entries, dumps, substitute):
    """The binary stage's commands still run when its embedded binary `substitute` is a substitute: those that
    make another dump (the cubin of a fatbin), and those making a file one of them reads."""
    kept, read = [], set()
    for entry in reversed(entries):
        written = set(_written(entry["argv"]))
        if any(name in dumps and name != substitute for name in written) or written & read:
            kept.insert(0, entry)
            read |= set(entry["argv"][1:])
    return kept


def _substituted(script_name, job, stage, path):
    """The lines standing for a substituted stage: its dump, the substitute as the build used it, is kept."""
    dump = _operand(os.path.basename(path))
    what = f"{dump} (module @{job.module.name}, stage {stage}) is the substitute {path} as the build used it"
    return [_comment(f"substituted: {what}; not remade, the later stages run from it"),
            _say(f"{script_name}: {what}; not remade, the later stages run from it"),
            f"if [ ! -f {shlex.quote(dump)} ]; then",
            "  " + _say(f"{script_name}: {dump} is missing: copy the substitute {path} here as {dump}", error=True),
            "  exit 1",
            "fi"]


def _job_lines(job, options, entries, substituted):
    """One job's lines: its exact commands, the others as comments, and a substituted stage kept as it is."""
    lines = [_comment(f"module @{job.module.name}: {job.target.name} {job.chip}, O{job.opt_level}")]
    dumps = {_name(options, job, suffix) for suffix in stages.dump_suffixes(job.target, options.format)}
    binary = [entry for entry in entries if entry["stage"] == stages.BINARY]
    if stages.BINARY in substituted:
        binary = _still_run(binary, dumps, _operand(os.path.basename(substituted[stages.BINARY])))
    between = []  # files a command writes that are no dumps (an object before linking): removed after
    noted = set()
    for entry in entries:
        stage = entry["stage"]
        if stage in substituted and stage not in noted:
            noted.add(stage)
            lines += _substituted(options.dump_prefix + REPRO_DUMP, job, stage, substituted[stage])
        if stage in substituted and (stage != stages.BINARY or entry not in binary):
            continue
        lines.append(_command(entry["argv"]) if entry["exact"] else "# approx: " + _command(entry["argv"], _one_line))
        if entry["exact"]:
            between += [name for name in _written(entry["argv"]) if name not in dumps]
    return lines + [f"rm -f {shlex.quote(name)}" for name in between]


def script(jobs, options, by_job, by_module=None, substituted=None):
    """The text of repro.sh: the exact commands, run from the folder the script is in; the others as comments;
    each substituted stage (`substituted`: job id -> {stage: the substitute's path}) kept, never remade. Each
    tool is a variable set to the compiling machine's tool unless already set (`PTXAS=... sh repro.sh` on
    another machine)."""
    entries = [entry for job in jobs for entry in by_job[job.id]] + \
        [entry for found in (by_module or {}).values() for entry in found]
    tools = {}
    for entry in entries:
        tools.setdefault(_variable(entry["argv"][0]), entry["argv"][0])
    lines = ["#!/bin/sh",
             "# Remakes this folder's stage dumps from the previous stage's dump with the stock tools, byte for byte",
             "# (written by mlirgpu; its user guide, docs/guide/kernel-loop.md, says more under 'Reproduce any stage').",
             "# Lines starting with '# approx:' remake a stage with the same code but not the same bytes; run them by hand.",
             "# Set a tool's variable to use another.",
             "# A substituted stage is kept as the build used it, and the later stages run from it.",
             "set -e",
             'here=$(dirname -- "$0"; echo .)  # the dot keeps a newline that ends the folder name',
             'cd -- "${here%??}"']
    lines += [f'if [ -z "${{{name}:-}}" ]; then {name}={shlex.quote(path)}; fi' for name, path in sorted(tools.items())]
    for job in jobs:
        lines += _job_lines(job, options, by_job[job.id], (substituted or {}).get(job.id, {}))
    for module, found in (by_module or {}).items():
        if found:
            lines.append(_comment(f"module @{module}: its fat container"))
            lines += [_command(entry["argv"]) for entry in found]
    return "\n".join(lines) + "\n"
