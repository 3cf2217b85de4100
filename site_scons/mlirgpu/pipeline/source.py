"""From a `.mlir` file to its `gpu.module`s: normalise with mlir-opt, lower target-neutral code, split.

`mlir-opt --mlir-print-local-scope --mlir-print-debuginfo` prints the file with aliases inlined and locations
kept; top-level ops print at indentation 2, so each direct child `gpu.module` is the run of lines from
`  gpu.module @...` to the next line starting with `  }` (printed strings never hold raw newlines). Each piece is
then a standalone module for `mlir-translate --no-implicit-module`. Local-scope printing drops the
`{-# dialect_resources #-}` trailer, so it is taken from a plain print and appended to pieces that use it.
"""
import itertools
import re
from dataclasses import dataclass, replace

from ..errors import CompileError, CompileWarning
from ..util.fsutil import read_input
from . import lowering
from .planning import missing_target
from ..compile_options import hint
from ..util.mlirops import first_gpu_module, function_attribute_names, gpu_module_header, op_spans
from ..util.mlirtext import SYMBOL, Structure, Unreadable, matching_close, skip_space, symbol_name, unpreceded
from ..util.mlirtargets import target_list
from ..llvm.mlirtools import run_mlir_tool
from ..targets import TARGETS, target_for_attribute
from ..targets.base import TargetAttr

_MODULE_HEAD = re.compile(r'^  gpu\.module @("[^"\\]*(?:\\.[^"\\]*)*"|[\w$.\-]+)\s*(<#[^\[{]*>)?')  # strings: mlirtext
_LOC = re.compile(r'loc\("[^"\\]*(?:\\.[^"\\]*)*":(\d+):\d+\)\s*$')


@dataclass(frozen=True)
class GpuModule:
    name: str
    line: int
    text: str
    targets: tuple
    handler: str = ""  # offloading handler, e.g. `<#gpu.select_object<1>>`
    direct: bool = False  # cut straight from the file by the scan (see scan.direct_source), not normalised


@dataclass
class Source:
    """A loaded .mlir file: its gpu.modules (lowered and targeted) and, when it holds host code that launches
    kernels, the container text in which each gpu.module is later replaced by a gpu.binary."""

    path: str
    modules: list
    container: str = ""  # normalised (and lowered) file text; '' when there is no host code
    host_passes: str = ""  # a user pipeline's passes after its serialization, run on the host code with binaries

    @property
    def has_host_code(self):
        return bool(self.container)


def _run_mlir_opt(args, source, what):
    return run_mlir_tool("mlir-opt", args, source, what)


def _read_source(path):
    data = read_input(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CompileError("not a UTF-8 text file", file=path, line=line, fix="pass an MLIR source file") from exc


def normalise(path):
    """The file printed by mlir-opt in local scope with locations (raises on syntax errors)."""
    _read_source(path)
    return _run_mlir_opt([path, "--mlir-print-local-scope", "--mlir-print-debuginfo"], path, "parsing")


# Dialects whose ops the built-in lowering cannot take, and the passes that make them lowerable.
_BUFFERIZE = "one-shot-bufferize{bufferize-function-boundaries}, convert-linalg-to-loops, "
_SUBGROUP = "test-gpu-subgroup-reduce-lowering{expand-to-shuffles}, "


def lower(path, target, chips, features, opt_level, options=None, host=False):
    """Outline kernels, attach `target` once per chip, and lower gpu/arith/memref/math/scf to the target's LLVM
    dialect; or run the user's `options.lowering` instead (up to its serialization, if it has one: see
    lowering.py), then attach the target to the modules still without one, and only to them. (lowered text,
    host text): with `host`, the host code after the pipeline's passes after serialization where the same run
    gave it (lowering.lower_with_host), else None."""
    what = f"lowering target-neutral code for {target.name}"
    args = ["--mlir-print-local-scope", "--mlir-print-debuginfo"]
    if options is not None and options.lowering:
        pipeline = lowering.expand(options.lowering, path)
        device = "--pass-pipeline=" + lowering.device_pipeline(pipeline, options)
        text, host_text = (host and lowering.lower_with_host(path, pipeline, options, args, what + " (--lowering)")
                           or (run_mlir_tool("mlir-opt", [path, device, *args], path, what + " (--lowering)"), None))
        if "gpu.binary" in text and "gpu.module" not in text:
            raise CompileError("the lowering pipeline already serialized the gpu.modules (gpu-module-to-binary)",
                               file=path, fix="end the pipeline before serialization; mlirgpu serializes")
        bare = [module.name for module in split(text, path) if not module.targets]
        if not bare:
            return text, host_text
        attach = target.lowering.attach_pipeline(chips, features, opt_level, modules=lowering.only_modules(bare))
        return run_mlir_tool("mlir-opt", ["-", f"--pass-pipeline={attach}", *args], path, what, text=text), host_text
    try:
        pipeline = target.lowering.lowering_pipeline(chips, features, opt_level)
        return run_mlir_tool("mlir-opt", [path, f"--pass-pipeline={pipeline}", *args], path, what), None
    except CompileError as exc:
        failed = re.search(r"failed to legalize operation '([\w.]+)'", exc.message)
        if failed:
            op = failed.group(1)
            if op == "gpu.subgroup_reduce":
                suggested = target.lowering.lowering_pipeline(chips, features, opt_level, before_all=_SUBGROUP)
            elif op.split(".")[0] in ("tensor", "linalg", "bufferization"):
                suggested = target.lowering.lowering_pipeline(chips, features, opt_level, before_all=_BUFFERIZE)
            else:
                suggested = None
            exc.fix = (target.lowering.lowering_fix(op, "") or
                       (f"lower it with your own pipeline: {hint('lowering', suggested)}" if suggested else _OWN_PIPELINE))
        elif exc.line and not target.lowering.lowers_cf_assert and "cf.assert" in _source_line(path, exc.line):
            takers = [each.name for each in TARGETS.values() if each.lowering.lowers_cf_assert]
            exc.fix = (f"MLIR 22 lowers cf.assert for {', '.join(takers)} only (upstream's lowering for "
                       f"{target.name} fails the same way): remove it from the kernel, or build it for "
                       f"{hint('target', takers[0])}")
        raise


def _source_line(path, line):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return next(itertools.islice(handle, line - 1, None), "")
    except OSError:
        return ""


_OWN_PIPELINE = ("the built-in lowering takes gpu, arith, math, memref, scf, cf and affine code; give your own "
                 f"pipeline with {hint('lowering')}")
_OP_AT_LINE_START = re.compile(r"^[ \t]*(?:%[^=\n]*=[ \t]*)?([a-z_][\w$]*)\.([\w$.]+)", re.M)
_LOC_IN_LINE = re.compile(r'loc\("[^"\\]*(?:\\.[^"\\]*)*":(\d+):\d+\)')


def check_lowerable(modules, target, path, chips, features, opt_level):
    """Raise for the first op of a target-less module in a dialect the built-in lowering takes only after some
    passes (a target's `dialect_passes`), naming the dialect and a `--lowering` that takes it (the built-in one
    with those passes first); or the targets that take it at all."""
    known = {dialect for each in TARGETS.values() for dialect in each.lowering.dialect_passes}
    for module in modules:
        if module.targets:
            continue
        for match in _OP_AT_LINE_START.finditer(module.text):
            dialect = match.group(1)
            if dialect not in known:
                continue
            op, line = f"{dialect}.{match.group(2)}", _op_line(module.text, match) or module.line
            where = f"gpu.module @{module.name} holds '{op}' ({dialect} dialect), which the built-in lowering for " \
                    f"{target.name} does not take"
            if dialect not in target.lowering.dialect_passes:
                takers = [each.name for each in TARGETS.values() if dialect in each.lowering.dialect_passes]
                raise CompileError(where, file=path, line=line, fix=f"the {dialect} dialect is for "
                                   f"{', '.join(takers)} only: set {hint('target', takers[0])}")
            before = _BUFFERIZE if dialect == "linalg" and "tensor<" in module.text else \
                target.lowering.dialect_passes[dialect]
            suggested = target.lowering.lowering_pipeline(chips, features, opt_level, before_all=before)
            raise CompileError(where, file=path, line=line, fix=f"lower it with {hint('lowering', suggested)}")


def check_lowered(modules, target, path):
    """Raise for the first op the built-in lowering left in a gpu.module that mlir-translate cannot translate
    (anything but the LLVM dialect and the targets' own dialects), at the source line of its location: otherwise
    translation fails with a message about the lowered text's own lines."""
    translatable = {"llvm"} | {known.attribute.split(".")[0] for known in TARGETS.values()}
    for module in modules:
        body = module.text.split("\n", 1)[-1]  # after the gpu.module line
        left = [match for match in _OP_AT_LINE_START.finditer(body) if match.group(1) not in translatable]
        if not left:
            continue
        # An op of the source's dialects says more than the casts the conversion left around it.
        match = next((found for found in left if found.group(1) != "builtin"), left[0])
        op = f"{match.group(1)}.{match.group(2)}"
        end = body.find("\n", match.end())
        line_text = body[match.start() : end if end >= 0 else len(body)]
        locations = _LOC_IN_LINE.findall(line_text)
        raise CompileError(f"the built-in lowering for {target.name} left '{op}' in gpu.module @{module.name}, "
                           "which cannot be translated to LLVM IR", file=path,
                           line=int(locations[-1]) if locations else module.line,
                           fix=target.lowering.lowering_fix(op, line_text) or _OWN_PIPELINE)


# `gpu.launch` in host code (kernel outlining), not `gpu.launch_func`
_OUTLINED_LAUNCH = re.compile(r"^\s*(?:%\S+ = )?gpu\.launch\b(?!_)", re.M)


def lowering_needed(text, modules):
    """True when some gpu.module has no target or host code holds `gpu.launch` (kernel outlining)."""
    if _OUTLINED_LAUNCH.search(text):
        return True
    return any(not module.targets for module in modules)


def _read_before_lowering(path, options, scanned):
    """(text, gpu.modules) of `path` before its lowering: normalised by mlir-opt and split; or, with a user's
    pipeline, whose run reads (and checks) the file itself, its text and the gpu.modules the scan read in it
    (`scanned`; none if it outlines them all): one mlir-opt run fewer per compile of an integration test's RUN
    line."""
    if options.lowering:
        text = _read_source(path)
        written = [GpuModule(m.name, text.count("\n", 0, m.start) + 1, text[m.start : m.end], m.targets, m.handler)
                   for m in scanned or () if m.start >= 0]  # not those it will outline
        if written or ((scanned is not None or "gpu.module" not in text) and _OUTLINED_LAUNCH.search(text)):
            return text, written
    text = normalise(path)
    return text, split(text, path)


def _resources(path, pieces_need):
    if not pieces_need:
        return ""
    plain = _run_mlir_opt([path], path, "reading dialect resources")
    start = plain.rfind("{-#")
    return plain[start:] if start >= 0 else ""


def _targets_of(head, start, source, line):
    """The target list `[#<dialect>.target<...>, ...]` of a printed gpu.module header from `start` (after the symbol
    and handler), read by the same reader as the scan."""
    pos = skip_space(head, start)
    if not head.startswith("[", pos):
        return ()
    try:
        found, _end = target_list(head, pos, {}, target_for_attribute)
    except Unreadable as exc:
        unknown = re.match(r"#([\w$.\-]+) is not a target attribute", str(exc))
        if unknown:
            raise CompileError(f"unsupported target attribute #{unknown.group(1)}", file=source, line=line,
                               fix=f"use one of {', '.join('#' + t.attribute for t in TARGETS.values())}") from None
        raise CompileError(f"cannot read the target list of {head.strip()[:80]}: {exc}", file=source,
                           line=line) from None
    return tuple(TargetAttr(*item) for item in found)


def split(text, source):
    """The direct child gpu.modules of a normalised file, in order."""
    lines = text.splitlines()
    modules = []
    i = 0
    while i < len(lines):
        match = _MODULE_HEAD.match(lines[i])
        if not match:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("  }"):
            end += 1
        loc = _LOC.search(lines[end]) if end < len(lines) else None
        line = int(loc.group(1)) if loc else None
        piece = "\n".join(lines[i : end + 1]) + "\n"
        modules.append(GpuModule(symbol_name(match.group(1)), line, piece,
                                 _targets_of(lines[i], match.end(), source, line),
                                 (match.group(2) or "").strip()))
        i = end + 1
    return modules


def unpassed_parameter_warnings(modules, path):
    """A warning per kernel with a parameter no launch passes: for some targets MLIR 22 lowers a workgroup memory
    attribution (its conversion, also in upstream's named pipeline) into one more `ptr addrspace(3)` parameter
    (marked `llvm.workgroup_attribution`), which `gpu.launch_func` never fills."""
    warnings = []
    for module in modules:
        if "llvm.workgroup_attribution" not in module.text:  # the usual module: nothing to read
            continue
        try:
            kernels = _kernels_with_attributions(module.text)
        except Unreadable:
            continue  # text the reader does not follow (generic syntax) is not checked
        warnings += [CompileWarning(f"kernel @{kernel} of gpu.module @{module.name} takes its workgroup memory as an "
                                    "extra ptr addrspace(3) parameter that no launch passes (MLIR 22's "
                                    f"{_target_names(module)} lowering, as upstream's): use an llvm.mlir.global in "
                                    "addrspace 3", file=path,
                                    line=module.line) for kernel in kernels]
    return warnings


def _target_names(module):
    return "/".join(sorted({attr.target.name for attr in module.targets})) or "target's"


def _kernels_with_attributions(text):
    """The `gpu.kernel` llvm.funcs directly in the gpu.module `text` with an `llvm.workgroup_attribution`
    parameter."""
    st = Structure(text)
    head = first_gpu_module(st)
    body = gpu_module_header(st, head.end()).body
    found = []
    for op, _start, name_end, span_end in op_spans(st, body + 1, st.closing[body], st.depth_at(body + 1)):
        if op != "llvm.func" or "gpu.kernel" not in function_attribute_names(st, name_end, span_end):
            continue
        symbol = SYMBOL.search(st.clean, name_end, span_end)  # found: function_attribute_names read it
        opened = st.masked.find("(", symbol.end())
        if "llvm.workgroup_attribution" in st.clean[opened : matching_close(st.clean, opened, "(", ")")]:
            found.append(symbol_name(symbol.group(1)))
    return found


HOST_PIPELINE = (
    "convert-math-to-llvm, finalize-memref-to-llvm, convert-arith-to-llvm, convert-cf-to-llvm, "
    "convert-func-to-llvm, gpu-to-llvm, reconcile-unrealized-casts"
)


_LAUNCH, _NAME_CHAR = re.compile(r"gpu\.launch(?:_func)?\b"), re.compile(r"[\w.]")  # not after [\w.]


def has_host_code(text):
    """True when host code launches kernels (`gpu.launch_func`, or `gpu.launch` to be outlined)."""
    return next(unpreceded(_LAUNCH, text, _NAME_CHAR), None) is not None


def replace_modules(text, pieces):
    """`text` with each top-level gpu.module replaced by `pieces[name]` (a str), in place."""
    lines = text.splitlines(keepends=True)
    out = []
    i = 0
    while i < len(lines):
        match = _MODULE_HEAD.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("  }"):
            end += 1
        out.append(pieces[symbol_name(match.group(1))])
        i = end + 1
    return "".join(out)


def _lower_host(text, path):
    args = ["-", f"--pass-pipeline=builtin.module({HOST_PIPELINE})", "--mlir-print-local-scope",
            "--mlir-print-debuginfo"]
    return run_mlir_tool("mlir-opt", args, path, "lowering host code", text=text,
                         fix="write host code MLIR's gpu-to-llvm can lower (async gpu ops), or set "
                             f"{hint('host_code', 'ignore')} to embed only the binaries")


# Host-side dialects the host lowering leaves in place, and the passes that lower them (as upstream's
# integration tests' RUN lines run them); what follows serialization in a pipeline also needs the last steps.
_HOST_PASSES = {
    "vector": "convert-vector-to-scf, convert-scf-to-cf, convert-vector-to-llvm",
    "async": "async-to-async-runtime, async-runtime-ref-counting, convert-async-to-llvm",
    "scf": "convert-scf-to-cf",
    "linalg": "convert-linalg-to-loops, convert-scf-to-cf",
}
_LAST_HOST_PASSES = "convert-func-to-llvm, convert-arith-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts"
_HOST_DIALECTS = ("llvm", "gpu", "builtin")  # what mlir-translate takes in host code with gpu.binary ops


def check_host(text, path, before="", serialized=False):
    """Raise for the first op of host code (outside the gpu.modules) that mlir-translate cannot translate, at its
    source line, naming the dialect and the `--lowering` that lowers it: `before` (the pipeline the compile ran,
    or the built-in lowering) followed by the dialect's passes (and the last host passes, when they come after
    a pipeline's serialization). Instead of mlir-translate's "Dialect not found" at a line of lowered text."""
    host = re.sub(r"(?ms)^  gpu\.module @.*?^  \}[^\n]*$", "", text)
    for match in _OP_AT_LINE_START.finditer(host):
        if match.group(1) in _HOST_DIALECTS:
            continue
        op, dialect = f"{match.group(1)}.{match.group(2)}", match.group(1)
        raise CompileError(f"host code holds '{op}', which the host lowering leaves in place and mlir-translate "
                           "cannot translate", file=path, line=_op_line(host, match),
                           fix=_host_fix(dialect, before, serialized))


def _op_line(text, match):
    """The source line of the op at `match`: its location, printed on its line or after its regions' close."""
    end = text.find("\n", match.end())
    locations = _LOC_IN_LINE.findall(text[match.start() : end if end >= 0 else len(text)])
    if not locations:
        line_start = text.rfind("\n", 0, match.start() + 1) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group(0)
        close = re.compile(rf"^{re.escape(indent)}\}}.*$", re.M).search(text, match.end())
        locations = _LOC_IN_LINE.findall(close.group(0)) if close else []
    return int(locations[-1]) if locations else None


def _host_fix(dialect, before, serialized):
    passes = _HOST_PASSES.get(dialect)
    if not passes:
        return (f"add the passes that lower the {dialect} dialect to a {hint('lowering')} pipeline (paste the RUN "
                f"line of the test it comes from); or set {hint('host_code', 'ignore')} to embed only the binaries")
    if serialized:
        passes += ", " + _LAST_HOST_PASSES
    pipeline = f"{before}, {passes}" if before else passes
    return (f"lower it with {hint('lowering', pipeline)}; or set {hint('host_code', 'ignore')} to embed only the "
            "binaries")


def load(path, options, scanned=None):
    """The gpu.modules of `path`, lowered and given a target from `options` where they carry none; host code
    that launches kernels is lowered to the LLVM dialect (MLIR's launch path) and kept as the container.
    `scanned`: the fast scan's modules of the file (scanned.Scan.modules), or None where it stepped aside."""
    text, modules = _read_before_lowering(path, options, scanned)
    used, host = "", None  # the lowering this compile runs (what a fix for its host code extends), lower()'s host
    serializing = lowering.expand(options.lowering, path) if options.lowering else None
    if serializing is not None and serializing.binary is None:
        serializing = None
    if options.lowering and not options.target and modules and all(m.targets for m in modules):
        options = replace(options, target=modules[0].targets[0].target.name)  # a pipeline that attaches none
    if lowering_needed(text, modules) or (options.lowering and modules):  # a user's pipeline runs on them all
        if not options.target:
            untargeted = next((m for m in modules if not m.targets), None)
            raise missing_target(path, untargeted and untargeted.name, untargeted and untargeted.line)
        target = TARGETS[options.target]
        chips = [chip for chip in (options.chip or target.default_chip).split(",") if chip]
        for chip in chips:
            try:
                target.checks.check_chip(chip)
            except CompileError as exc:
                raise exc.located(path)
        opt_level = target.default_opt_level if options.opt_level is None else options.opt_level
        if not options.lowering:
            check_lowerable(modules, target, path, chips, options.features, opt_level)
        lowered, host = lower(path, target, chips, options.features, opt_level, options,
                              host=bool(serializing) and options.host_code == "compile")
        used = lowering.canonical(options.lowering) if options.lowering else \
            target.lowering.lowering_pipeline(chips, options.features, opt_level)[len("builtin.module(") : -1]
        original = {m.name: m for m in modules if m.targets}
        # Modules that had no target are the build target's jobs, whatever attribute it attaches; those that had
        # one keep it as written (the built-in attach would append one), or as a user's pipeline lowered them.
        modules = [(m if options.lowering else original[m.name]) if m.name in original else
                   replace(m, targets=tuple(replace(attr, target=target) for attr in m.targets))
                   for m in split(lowered, path)]
        if not options.lowering:
            check_lowered([m for m in modules if m.name not in original], target, path)
        # Modules that had targets keep them as written (attach-target would have appended one).
        text = replace_modules(lowered, {m.name: m.text for m in modules})
    container = host_passes = ""
    if options.host_code == "compile" and has_host_code(text):
        if host is not None:  # the host passes after the pipeline's serialization ran in its lowering's run
            container = host
            check_host(container, path, used, serialized=True)
        elif serializing:  # the pipeline lowered the host code up to its serialization; it finishes after it
            container, host_passes = text, lowering.host_pipeline(serializing)
        else:
            container = _lower_host(text, path)
            check_host(container, path, used)
            targets = {m.name: m.targets for m in modules}  # the host lowering ran on the gpu.modules too
            modules = [replace(m, targets=targets.get(m.name, m.targets)) for m in split(container, path)]
    uses = [m for m in modules if "dense_resource<" in m.text]
    trailer = _resources(path, uses)
    if trailer:
        modules = [
            GpuModule(m.name, m.line, m.text + trailer, m.targets, m.handler) if m in uses else m for m in modules
        ]
        if container:
            container += trailer
    return Source(path, modules, container, host_passes)
