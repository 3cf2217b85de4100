"""The roles a target plays, one object each, reached as `target.<role>` by the code that needs that role only
(tests/unit/test_target_roles.py checks which module uses which):

    checks     its attribute: parameters and their types, the chips it takes (planning, the scan, the lowering)
    lowering   target-neutral code: the attach and conversion passes, the default build chip (source, lowering)
    codegen    upstream's ModuleToObject, hook by hook under upstream's names: the target machine
               (`machine_cpu`), handleModulePreLink, loadBitcodeFiles, optimizeModule, translateToISA,
               moduleToObject; the stage list itself (`stages`), the libraries a build depends on, LLVM's
               failures explained (the stages, the stage runner, the scan)
    outputs    what a job leaves: the binary formats and their dump suffixes, the `#gpu.object` bytes and
               properties, fat containers, the vendor's sections, kernel resources (planning, embedding,
               substitutes, the reports)
    toolchain  the toolkit and the tools it runs: their paths (identities in cache keys and signatures), the
               device libraries a remote worker must share, whether a folder is such a toolkit

A target (mlirgpu.targets.base.Target) names a class for each role, the defaults here or its own subclasses;
a role reaches the target's name, attribute and defaults, and its other roles, through `self.target`.
"""
import functools
import os
import re
import shlex
from dataclasses import dataclass

from ..llvm import backend as llvm_backend, process, toolchain
from ..errors import CompileError
from ..util.naming import file_stem, library_for


class Library:
    """A bitcode library to link: its path, named metadata to erase, and whether to retarget it first."""

    def __init__(self, path, strip_named=(), retarget=False):
        self.path = path
        self.strip_named = tuple(strip_named)
        self.retarget = retarget

    def as_args(self):
        return (self.path, list(self.strip_named), self.retarget)


@dataclass(frozen=True)
class VendorSection:
    """Where a vendor's tools look for fat binaries in a host object: the section, its alignment, and the
    wrapper `{magic, version 1, pointer to the binary, null}` placed in `wrapper`."""

    section: str
    wrapper: str
    magic: int
    alignment: int
    readers: str  # the vendor's tools that look there


# The names of the registered targets (mlirgpu.targets.register adds each): a library file named for one of them
# is linked into that target's jobs only (Codegen.user_libraries).
REGISTERED = set()

# The parameters every target attribute takes and their types; targets add their own.
COMMON_PARAMETERS = {"O": int, "triple": str, "chip": str, "flags": dict, "link": list}


class Role:
    """One role of `target`."""

    def __init__(self, target):
        self.target = target


class Checks(Role):
    """The attribute: its parameters, the chips."""

    parameters = COMMON_PARAMETERS
    link_parameter = "link"  # the attribute's parameter listing bitcode files to link (XeVM: `linkFiles`)

    def parameter_problem(self, params):
        """Why the attribute's parameters cannot be compiled as written (unknown name, wrong type, O out of
        range, a link entry that is not a string), or None."""
        attribute = self.target.attribute
        for key, value in params.items():
            expected = self.parameters.get(key)
            if expected is None:
                return f"unknown parameter '{key}' of #{attribute}"
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                return f"parameter '{key}' of #{attribute} must be {expected.__name__}"
        if params.get("O", self.target.default_opt_level) not in (0, 1, 2, 3):
            return f"invalid optimization level O = {params['O']}"
        if not all(isinstance(item, str) for item in params.get(self.link_parameter, [])):
            return f"parameter '{self.link_parameter}' of #{attribute} must hold strings"
        return None

    def chips(self):
        """The chips this target takes (LLVM's processors for its triple, from `llvm-mc -mcpu=help`)."""
        return _processors(self.target.default_triple)

    def check_chip(self, chip):
        """Raise a CompileError naming the supported chips when the chip is not one of them."""
        known = self.chips()
        name = self.target.name
        if known and chip not in known:
            close = [c for c in known if c.startswith(chip[:4])][:12]
            raise CompileError(f"unknown {name} chip '{chip}'",
                               fix=f"use one of LLVM's {name} processors, e.g. {', '.join(close or known[:12])}")


class Lowering(Role):
    """Target-neutral code: how the built-in lowering attaches this target and converts to its LLVM dialect."""

    attach_pass = None  # the mlir-opt pass attaching this target, e.g. 'nvvm-attach-target'
    # Dialects the built-in lowering takes once these passes ran first (named, with them, before it runs: some
    # fail later with a verifier message about their rewritten bodies, e.g. linalg on memrefs).
    dialect_passes = {"linalg": "convert-linalg-to-loops, "}
    lowers_cf_assert = False  # whether MLIR 22's conversion lowers cf.assert in kernels for this target

    def conversion_pass(self, chips):
        """The pass converting a target-neutral gpu.module to this target's LLVM dialect."""
        raise NotImplementedError

    def attach(self, chips, features, opt_level, modules=""):
        """The attach pass, once per chip (on the gpu.modules matching the regex `modules`, or all)."""
        only = f' module="{modules}"' if modules else ""
        return ", ".join(f"{self.attach_pass}{{chip={chip} O={opt_level}" + (f" features={features}" if features
                                                                               else "") + only + "}" for chip in chips)

    def lowering_pipeline(self, chips, features, opt_level, before_all=""):
        """The built-in mlir-opt pipeline for target-neutral code (as upstream's integration tests lower it):
        outline kernels, attach this target once per chip, lower affine and scf, convert the gpu.modules.
        `before_all` holds extra passes to run first (the error hints suggest some)."""
        return (f"builtin.module({before_all}gpu-kernel-outlining, {self.attach(chips, features, opt_level)}, "
                f"lower-affine, convert-scf-to-cf, gpu.module({self.conversion_pass(chips)}, canonicalize, cse, "
                "reconcile-unrealized-casts))")

    def attach_pipeline(self, chips, features, opt_level, modules=""):
        """Attach this target (once per chip) to the gpu.modules whose names match the regex `modules` (those
        that carry none after a user's own lowering)."""
        return f"builtin.module({self.attach(chips, features, opt_level, modules)})"

    def lowering_fix(self, op, line):
        """What to do about an op the built-in lowering could not convert for this target (`line`: its lowered
        text, when the lowering left it in place), or None for the general advice."""
        return None

    def example_lowering(self):
        """A `--lowering` for this target that mlir-opt 22 reads, for fixes about a pipeline it cannot read
        [the built-in lowering at the default chip]."""
        target = self.target
        return self.lowering_pipeline([target.default_chip], "", target.default_opt_level)[len("builtin.module("):-1]

    def default_build_chip(self, options, environment=None):
        """The chip target-neutral modules get when the build names none (documented per target)."""
        return self.target.default_chip


class Codegen(Role):
    """Upstream's ModuleToObject, one hook per step, in its order (the stage table runs them: pipeline.stages)."""

    kernel_convention = None  # the LLVM calling convention of kernels, e.g. 'ptx_kernel'
    isolated_codegen = False  # emit ISA and objects in a forked child (see llvm_ops.emit_assembly)

    def stages(self, shared):
        """The stages a job of this target runs, in order: `shared`, the shared table's stages for the
        compile's format and emit (mlirgpu.pipeline.stages.for_format), by default. A target adds a stage of its
        own by returning the list with its `Stage` inserted; its dump is then planned, declared and cached as
        the shared stages' are (tests/marked_target.py)."""
        return shared

    def machine_cpu(self, attr):
        """(CPU, features) upstream's serializer gives LLVM's target machine for the attribute."""
        return attr.chip, attr.features

    def edit_translation(self, module, llvm_ir):
        """The LLVM IR translated from `module` (a gpu.module: its name and text), changed as this target's
        serializer changes the gpu.module before translating it. Upstream's change stays on the module, so the
        pipeline applies it to the jobs of every target listed after this one on the module too."""
        return llvm_ir

    def handle_module_pre_link(self, job, module):
        """Upstream's handleModulePreLink: change the module before libraries are linked (nothing by default)."""

    def load_bitcode_files(self, job, module, options):
        """Upstream's loadBitcodeFiles: the ordered `Library` list to link (-l files first, then the attribute's
        `link` list, then the target's own), as upstream orders them."""
        return [Library(path) for path in self.user_libraries(job.attr, options.link_libs)]

    def optimize_module(self, job, module):
        """Upstream's optimizeModule: LLVM's default pipeline at the job's O level."""
        from ..llvm import ops as llvm_ops

        return llvm_ops.optimize(module, job.opt_level)

    def translate_to_isa(self, job, module):
        """Upstream's translateToISA: the assembly text of the optimized module, from the target machine."""
        cpu, features = self.machine_cpu(job.attr)
        return llvm_backend.emit_assembly(module, job.opt_level, cpu, features, self.isolated_codegen)

    def module_to_object(self, job, assembly, options, scratch):
        """Upstream's moduleToObject, the serializer: {suffix: bytes} for the outputs role's
        `binary_suffixes(options.format)`, from the `isa` stage's Assembly (its text, and the module it came
        from). By default: `run_binary_commands`."""
        return self.run_binary_commands(job, assembly, options, scratch,
                                        self.target.outputs.binary_suffixes(options.format))

    def binary_commands(self, job, options, folder):
        """[(argv, what, fix)]: the stock-tool runs that make the job's binaries from its dumps, on files named
        as the dumps (with the dump prefix) in `folder`. The default serializer runs them in a scratch folder;
        with folder '' they are the commands that reproduce the binary stage in a dump folder (mlirgpu.pipeline.repro).
        A serializer that makes the binary in process names the stock equivalent here."""
        return []

    def run_binary_commands(self, job, assembly, options, scratch, suffixes):
        """The ISA text written under its dump name into `scratch`, each of `binary_commands` run there, and
        the files of `suffixes` they made ({suffix: bytes})."""
        isa = os.path.join(scratch, f"{options.dump_prefix}{job.stem}.isa")
        name = self.target.name
        try:
            with open(isa, "w", encoding="utf-8") as handle:
                handle.write(assembly.text)
        except OSError as exc:  # a full disk or a file size limit (`ulimit -f`): the compile's one line
            raise CompileError(f"cannot write the ISA for {name}'s serializer in the scratch folder: "
                               f"{exc.strerror}", fix="free disk space or raise the file size limit (ulimit -f)") \
                from exc
        log = []
        for argv, what, fix in self.binary_commands(job, options, scratch):
            result = run_tool(argv, what, job, fix=fix, names={scratch + os.sep: ""})
            log.append(tool_log(result, scratch))
        outputs = {}
        for suffix in suffixes:
            with open(os.path.join(scratch, f"{options.dump_prefix}{job.stem}.{suffix}"), "rb") as handle:
                outputs[suffix] = handle.read()
        if self.target.outputs.keeps_tool_log:
            outputs[LOG] = "".join(log).encode("utf-8")
        return outputs

    def has_kernels(self, llvm_ir):
        """Whether translated LLVM IR defines a kernel (a module without one is warned about)."""
        return re.search(rf"^define (?:[\w\s]+ )?{self.kernel_convention} ", llvm_ir, re.M) is not None

    def user_libraries(self, attr, link_libs=()):
        """The -l files (`link_libs`), then the attribute's link=[...] files, that are for a job of `attr`: a
        library built here for another target or chip (named so: mlirgpu.util.naming.library_file) is left to
        its own jobs, so `GPU_LINKLIBS` may list every file of a library."""
        paths = list(link_libs) + list(attr.link)
        kinds = [library_for(path, REGISTERED) for path in paths]
        return [path for path, kind in zip(paths, kinds)
                if kind is None or kind[0] == self.target.name and kind[1] in (None, file_stem(attr.chip))]

    def library_inputs(self, job, options):
        """Every file `load_bitcode_files` may return for this job that exists, whatever the module declares
        (the stage cache keys the link stage on their contents; one that is missing is left out, never None:
        the link stage reports it when the module needs it). Targets add their own through `existing`."""
        return existing(self.user_libraries(job.attr, options.link_libs))

    def provided_elsewhere(self, name):
        """Whether a function a linked module still only declares is provided after the link stage (by the
        optimizer, the binary tool, the driver or the runtime): any other is a function no library defined,
        an error of the link stage. Nothing by default (LLVM's intrinsics are never asked about)."""
        return False

    def predicted_libraries(self, attr, symbols, ops, lowered, options, environment=None):
        """Paths of the bitcode files a job of this target may link for a module, found without compiling, from
        the `symbols` its text names and the `ops` it uses (`lowered`: the module is target-neutral code the
        build lowers): build tools make them dependencies. It may name more than the compile links, never
        fewer; files that do not exist are left out (the compile reports them)."""
        return [path for path in self.user_libraries(attr) if os.path.isfile(path)]

    def failure_fix(self, message):
        """What to do about an LLVM failure (`message`) in one of this target's stages, or None."""
        return None


class Outputs(Role):
    """What a job leaves: its binaries' formats and dumps, the `#gpu.object`, fat containers, the vendor layout."""

    vendor_section = None  # a VendorSection, where the vendor's tools read fat binaries (None: no vendor layout)
    embeds_fat_as = None  # what a fat container is called in the registry and header (e.g. 'fatbin', 'bundle')
    keeps_tool_log = True  # the binary stage keeps its tools' output as the `<stem>.log` dump (mlirgpu.pipeline.stages)
    assembles_from_text = True  # the serializer reads the ISA text (an .isa substitute can replace that stage)

    def binary_suffixes(self, fmt):
        """File suffixes the serializer writes for format `fmt` ('bin' or 'fatbin'); the last is embedded."""
        raise NotImplementedError

    def assembly_chip(self, text):
        """The chip an ISA text is for, as the target writes it (None when it names none)."""
        return None

    def assembly_object(self, text):
        """The bytes of the `#gpu.object` upstream's serializer makes for format isa (the host glue adds a NUL)."""
        return text.encode("utf-8")

    def embedded_format(self, fmt):
        """The format recorded for a binary this target embeds for `fmt` (upstream may fall back)."""
        return fmt

    def object_properties(self, job, fmt):
        """Properties upstream's serializer records in the `#gpu.object` (they shape the host launch glue)."""
        return {}

    def fat_container(self, count, options):
        """Dump suffix of one container for `count` chips of a module (several chips, or a layout that needs
        one), or None for one binary per chip."""
        return None

    def combine(self, jobs, binaries, assemblies, options, scratch):
        """The fat container's bytes from each job's binaries ({suffix: bytes}) and Assembly."""
        raise NotImplementedError

    def combine_commands(self, jobs, options, folder, name):
        """[(argv, what, fix)]: the stock-tool runs that make the fat container `name` from the jobs' dumps in
        `folder` ([] where it is made in process without a stock equivalent)."""
        return []

    def kernel_resources(self, job, isa_path, options, toolkit):
        """Per kernel, the resources a report shows: dicts with `name`, `registers`, `spills`, `shared_bytes`,
        `local_bytes` (None where not defined), plus the target's own fields. `job` is a record's job entry."""
        return []


class Toolchain(Role):
    """The toolkit and the tools the target's compiles run."""

    # The LLVM tools a job of this target runs by name, every job (its binary stage's); a build's workers start
    # their fork servers while the build files are read (mlirgpu.pipeline.scan.tools_run).
    runs = ()

    def toolkit(self, options, environment=None):
        """This target's toolkit root (the `toolkit` option, else found), or None."""
        return None

    def owns_toolkit(self, path):
        """Whether the folder `path` is a toolkit of this target (a compile sent to another machine uses that
        machine's own toolkit of the same target)."""
        return False

    def tools(self, options, environment=None):
        """Paths of the external tools this target's compiles run that are found here (their identities enter
        signatures and cache keys). One not found is left out, never an error or None: the step that runs it
        reports it with what to install, whether or not a cache is on (toolchain.found)."""
        return []

    def device_libraries(self, options):
        """Paths of every device library this target's toolkit offers (a remote worker's must be the same)."""
        return []


@functools.lru_cache(maxsize=None)
def _processors(triple):
    """The processor names LLVM accepts for `triple` (from `llvm-mc -mcpu=help`)."""
    text = toolchain.tool_output(toolchain.llvm_tool("llvm-mc"), (f"--triple={triple}", "-mcpu=help")) or ""
    section = text.split("Available CPUs for this target:", 1)[-1].split("Available features", 1)[0]
    return tuple(re.findall(r"^\s+(\S+)\s+- ", section, re.M))


def existing(paths):
    """The files among `paths` (None and missing ones left out): what a cache key or a dependency list is made of."""
    return [path for path in paths if path and os.path.isfile(path)]


LOG = "log"  # the binary stage's tool output, kept beside its binaries


def tool_log(result, scratch):
    """A serializer tool's messages as kept in the `.log` dump (upstream 23 keeps them on the #gpu.object as
    its ISACompilerLog): stderr then stdout, scratch paths shown as dump names, and without `ptxas -v`'s
    "Compile time" lines, whose numbers change from run to run (the dumps of a build are reproducible)."""
    text = (result.stderr + result.stdout).decode("utf-8", "replace").replace(scratch + os.sep, "")
    return "".join(line for line in text.splitlines(True) if not re.search(r"\bCompile time = ", line))


def run_tool(argv, what, job, fix=None, names=None):
    """Run a serializer tool; a failure becomes a CompileError with its output and a repro command. `names`
    maps scratch files to what the user knows them as (the dump names), in the tool's messages. The files in
    those folders that the command names and that are not there before it runs are its outputs: a tool that
    ends well without writing one (a broken install, a stand-in script) is an error naming it, not a crash of
    whoever reads the file."""
    label = f"module @{job.module.name} ({job.chip}): {what}"
    outputs = [arg for arg in argv[1:] if any(arg.startswith(folder) for folder in names or {})
               and not os.path.exists(arg)]
    result = process.run(argv, label)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
        for scratch, shown in (names or {}).items():
            output = output.replace(scratch, shown)
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        first = next((line for line in lines if re.search(r"error", line, re.I)), lines[0] if lines else
                     f"exit code {result.returncode}")
        raise CompileError(f"{label} failed: {first}", fix=fix, detail=output + "\nrepro: " + shlex.join(argv))
    unwritten = [path for path in outputs if not os.path.exists(path)]
    if unwritten:
        raise CompileError(f"{label} ended without an error but wrote no {os.path.basename(unwritten[0])}",
                           fix=f"{argv[0]} is not a working {os.path.basename(argv[0])}: reinstall it or use another",
                           detail="repro: " + shlex.join(argv))
    return result
