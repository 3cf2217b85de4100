"""What a compile of a `.mlir` file will produce, found without running any tool (for build-system emitters).

A build system asks this on every run, also when nothing changed, so the text is read directly (comments and
strings skipped, braces counted; see `mlirtext`): the aliases before the top module, the top module (explicit,
`builtin.module`, or implicit), and each op directly inside it. For each `gpu.module` its symbol, handler and
target list are read; every other op's symbol joins the symbol table, and kernels that `gpu-kernel-outlining`
will create from `gpu.launch` are predicted as MLIR names them: `@<function>_kernel`, made unique against the
symbol table with one `_<n>` counter for the whole pass, placed right after their function.

The scan is never a guess. Whatever it is not certain about (generic op syntax, a nested module holding
gpu.modules, a launch naming its own module, an attribute it cannot read, ...) raises `Unreadable`, and the
callers ask mlir-opt instead (`planned_outputs`), so the prediction always equals what the compile writes; a
differential test checks this against mlir-opt on the corpus and on generated variants. It is linear in the
size of the file. Scans are remembered per content, also across runs (mlirgpu.pipeline.scancache).
"""
import dataclasses
import functools
import hashlib
import re
import sys

from . import scancache, scanned, sourcefile
from . import source as sources
from ..util import mlirtext
from ..errors import CompileError
from ..util.mlirtext import SYMBOL, Structure, Unreadable, read_symbol, unpreceded, value_end
from ..util.mlirtargets import target_list
from ..util.mlirops import gpu_module_header, header_end, op_spans
from ..llvm.mlirtools import TRANSLATED_DIALECTS
from .planning import check_options, library_files, plan, planned_dumps
from ..targets import TARGETS, target_for_attribute
from ..targets.base import TargetAttr
from .scanned import Scan, ScannedModule


_ALIAS_DEF = re.compile(r"([#!])([\w$.\-]+)[ \t]*=")
_TOP_MODULE = re.compile(r"(?:builtin\.)?module\b")
_GENERIC_OP = re.compile(r'"([A-Za-z_][\w$]*\.[\w$.]+)"\s*\(')
_STRUCTURAL_OPS = {"gpu.module", "builtin.module", "gpu.launch", "gpu.launch_func", "gpu.binary"}
# Found with mlirtext.unpreceded: launches not after a _NAME_CHAR, op names not after an _OP_BEFORE.
_LAUNCH, _HOST_LAUNCH = re.compile(r"gpu\.launch(?![\w.$])"), re.compile(r"gpu\.launch(?:_func)?(?![\w.$])")
_OPS = re.compile(r"([a-z_][a-z0-9_]*\.[a-z_][\w.]*)")
_NAME_CHAR, _OP_BEFORE = re.compile(r"[\w.$]"), re.compile(r"[\w.$%#!@^]")


def _gpu_module(st, name_end, aliases, lists):
    """Read `gpu.module @sym [<handler>] [[targets]] [attributes {...}] {` -> (name, targets, handler, body).
    `lists` remembers target lists read in this file by their text (files repeat one list many times)."""
    header = gpu_module_header(st, name_end)
    handler = st.clean[header.handler[0] : header.handler[1]] if header.handler else ""
    targets = ()
    if header.targets:
        written = st.clean[header.targets[0] : header.targets[1]]
        if written not in lists:
            lists[written] = tuple(TargetAttr(*item) for item in target_list(st.clean, header.targets[0], aliases,
                                                                             target_for_attribute)[0])
        targets = lists[written]
    return header.name, targets, handler, header.body


def _body_facts(st, start, end, shared):
    """The symbols named and the ops used in [start, end), in custom syntax and in generic syntax (whose quoted
    names the masked text hides). Each name is interned and each set is the one in `shared` equal to it where
    there is one: 10,000 modules using the same few ops hold one set of them, not 10,000 (the scan is
    remembered while the compile runs: 17 MB less at 10,000 modules)."""
    symbols = frozenset(sys.intern(match.group(1)) for match in SYMBOL.finditer(st.clean, start, end))
    ops = frozenset([*(sys.intern(match.group(1)) for match in unpreceded(_OPS, st.masked, _OP_BEFORE, start, end)),
                     *(sys.intern(match.group(1)) for match in _GENERIC_OP.finditer(st.clean, start, end))])
    return shared.setdefault(symbols, symbols), shared.setdefault(ops, ops)


def scan_text(text):
    """The Scan of a source's text; raises Unreadable where mlir-opt must decide. Comment and blank lines of
    `BIG_SPAN` or more before anything else (a file that starts with 48 MiB of comments) hold nothing the scan
    reads: the rest of the text is scanned alone and its offsets moved back, so no blanked copy of them is made
    (two 48 MB copies and the blanking itself)."""
    base = mlirtext.leading_comments_end(text)
    if base < mlirtext.BIG_SPAN:
        return _scan_whole(text)
    return _moved(_scan_whole(text[base:]), base)


def _moved(scan, base):
    """`scan`, of a text cut `base` characters after its file's start, with the file's offsets."""
    def at(offset):
        return offset + base if offset >= 0 else offset  # -1: none (an outlined module, no suffix)

    modules = tuple(dataclasses.replace(module, start=at(module.start), end=at(module.end)) for module in scan.modules)
    return dataclasses.replace(scan, modules=modules, prelude_end=at(scan.prelude_end),
                               suffix_start=at(scan.suffix_start), prelude_start=at(scan.prelude_start))


def _scan_whole(text):
    st = Structure(text)
    clean, masked = st.clean, st.masked
    aliases = {}
    pos = st.skip_space(0)
    prelude_start = masked.rfind("\n", 0, pos) + 1
    while pos < len(masked):
        alias = _ALIAS_DEF.match(masked, pos)
        if not alias:
            break
        end = value_end(masked, alias.end())
        if alias.group(1) == "#":
            aliases[alias.group(2)] = clean[alias.end() : end].strip()
        pos = st.skip_space(end)
    prelude_end = masked.rfind("\n", 0, pos) + 1
    trailer = masked.rfind("{-#")
    if trailer >= 0 and (st.depth_at(trailer) != 0 or masked[st.closing[trailer] + 1 :].strip()):
        raise Unreadable("text after the resource trailer")
    region_end = trailer if trailer >= 0 else len(masked)
    top = _TOP_MODULE.match(masked, pos)
    explicit = False
    if top:
        head = st.skip_space(top.end())
        if masked.startswith("@", head):
            _name, head = read_symbol(clean, head)
            head = st.skip_space(head)
        top_attributes = ""
        if masked.startswith("attributes", head):
            head = st.skip_space(head + len("attributes"))
            if not masked.startswith("{", head):
                raise Unreadable("module attributes")
            close = st.closing[head]
            top_attributes, head = masked[head + 1 : close].strip(), st.skip_space(close + 1)
        if not masked.startswith("{", head):
            raise Unreadable("module body")
        body_end = st.closing[head]
        after = st.skip_space(body_end + 1)
        while after < region_end and _ALIAS_DEF.match(masked, after):  # e.g. location aliases
            after = st.skip_space(value_end(masked, _ALIAS_DEF.match(masked, after).end()))
        if after >= region_end:  # the only top-level op: the top module
            explicit = True
            region, child_depth = (head + 1, body_end), 1
    if not explicit:  # an implicit module holds every top-level op
        region, child_depth = (pos, region_end), 0
    scan = _children(st, region, child_depth, aliases, explicit and top_attributes in ("", "gpu.container_module"),
                     (prelude_start, prelude_end, body_end + 1 if explicit else -1))
    _check_generic_ops(st, child_depth, scan.modules)
    return scan


def _check_generic_ops(st, child_depth, modules):
    """Ops in generic syntax (`"llvm.intr.ctlz"(...)`, `"gpu.yield"(...)`, as mlir-opt prints some) are read
    where nothing the scan reports depends on their form: inside gpu.modules that carry targets, and nested in
    the region of an op of the top module (a function's body, a launch's), where no op defines a symbol of the
    top module's table (outlining uniques its names against that table). There structure comes from braces,
    the symbols a body names from `@` references and the ops it uses from their quoted names (_body_facts).
    Modules, launches and binaries in generic syntax, and any generic op directly in the top module (it may be
    a function, a global or a module the scan would miss): mlir-opt decides."""
    inside = [(module.start, module.end) for module in modules if module.targets and module.start >= 0]
    for match in _GENERIC_OP.finditer(st.clean):
        if match.group(1) in _STRUCTURAL_OPS:
            raise Unreadable("generic operation syntax")
        if not any(start <= match.start() < end for start, end in inside) and st.depth_at(match.start()) <= child_depth:
            raise Unreadable("generic operation syntax")


def _children(st, region, depth, aliases, plain_top, parts):
    clean, masked = st.clean, st.masked
    modules, symbols, order, lists, facts = [], set(), [], {}, {}
    only_targeted_modules = plain_top
    for op, _start, name_end, span_end in op_spans(st, region[0], region[1], depth):
        head_end = header_end(st, name_end, span_end, depth)
        if op == "gpu.module":
            name, targets, handler, body = _gpu_module(st, name_end, aliases, lists)
            end = st.closing[body] + 1
            order.append(("module", ScannedModule(name, targets, _start, end, handler,
                                                  *_body_facts(st, body, end, facts))))
            symbols.add(name)
            only_targeted_modules &= bool(targets)
            continue
        only_targeted_modules = False
        if op in ("module", "builtin.module") and "gpu.module" in masked[name_end:span_end]:
            raise Unreadable("gpu.modules inside a nested module")
        symbol = SYMBOL.search(clean, name_end, head_end)
        owner = None
        if symbol:
            owner = read_symbol(clean, symbol.start())[0]
            symbols.add(owner)
        for launch in unpreceded(_LAUNCH, masked, _NAME_CHAR, head_end, span_end):
            region_open = masked.find("{", launch.end(), span_end)
            if region_open < 0 or "@" in masked[launch.end() : region_open]:
                raise Unreadable("gpu.launch naming its module or function")
            if owner is None:
                raise Unreadable("gpu.launch outside a symbol")
            region_close = st.closing[region_open]
            order.append(("launch", owner, _body_facts(st, launch.start(), region_close, facts)))
        order.append(("op", owner))
    # Outlining: the pass visits symbols in order, names each launch's module `<owner>_kernel`, uniqued in the
    # top symbol table with one counter for the pass, and inserts the modules in launch order after the owner.
    counter = 0
    pending = []
    for entry in order:
        if entry[0] == "module":
            modules.append(entry[1])
        elif entry[0] == "launch":
            base = unique = f"{entry[1]}_kernel"
            while unique in symbols:
                unique = f"{base}_{counter}"
                counter += 1
            symbols.add(unique)
            pending.append(ScannedModule(unique, (), symbols=entry[2][0], ops=entry[2][1]))
        else:
            modules += pending
            pending = []
    modules += pending
    lowering = any(not module.targets for module in modules)
    host = any(next(unpreceded(_HOST_LAUNCH, masked, _NAME_CHAR, *segment), None) for segment in st.segments())
    direct = (only_targeted_modules and bool(modules) and not host
              and not any(masked.find("llvm.di_", *segment) >= 0 for segment in st.segments())
              and len({module.name for module in modules}) == len(modules)
              and all(attr.target.checks.parameter_problem(attr.params) is None
                      for module in modules for attr in module.targets))
    prelude_start, prelude_end, suffix_start = parts
    return Scan(tuple(modules), lowering, host, direct, prelude_end, suffix_start, prelude_start)


@functools.lru_cache(maxsize=1)
def _scanner_identity():
    """A hash of the scanner's own code (this module, the MLIR text reader and the stored form of scans): scans
    stored by another version of any, which may have read a file differently, are never reused."""
    digest = hashlib.sha256()
    for module in (__file__, mlirtext.__file__, scancache.__file__, scanned.__file__):
        with open(module, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()


_scans = scancache.ScanCache(_scanner_identity, scanned.to_json, scanned.from_json)


def use_cache_file(path):
    """Keep scans across runs in `path` (the SCons tool uses one file per project, beside .sconsign)."""
    _scans.path = path


def scan_file(path):
    """The Scan of a file, remembered per content; raises Unreadable (also remembered) where mlir-opt must
    decide, and OSError / UnicodeDecodeError for files that cannot be read as text."""
    found = _scans.get(sourcefile.content_digest(path))
    if found is None:
        text, digest = sourcefile.read_text(path)
        try:
            found = scan_text(text)
        except Unreadable:
            found = scancache.UNREADABLE
        except RecursionError:  # never expected (the scan does not recurse deeply), but never a crash either
            found = scancache.UNREADABLE
        _scans.put(digest, found)
    if found == scancache.UNREADABLE:
        raise Unreadable("the fast scan steps aside")
    return found


def known_scan(path):
    """The Scan this process made of the file's current version, as `take_scan` takes it in another process, or
    None: a build tool's emitters scanned each source, and its compile's worker need not scan it again."""
    return _scans.handed(sourcefile.known_digest(path))


def take_scan(known):
    """Remember a `known_scan` of another process (for this process's life: see ScanCache.take)."""
    _scans.take(known)


def _with_build_targets(modules, options):
    """Give target-less modules the targets the build attaches (one per chip in options.chip)."""
    if all(module.targets for module in modules):
        return modules
    if not options.target:
        return None
    target = TARGETS[options.target]
    chips = [c for c in (options.chip or target.default_chip).split(",") if c]
    attached = tuple(TargetAttr(target, f'#{target.attribute}<chip = "{chip}">', {"chip": chip}) for chip in chips)
    return [m if m.targets else ScannedModule(m.name, attached, symbols=m.symbols, ops=m.ops) for m in modules]


def fast_outputs(path, options):
    """The dump files the scan alone predicts for a compile with `options`, or None where it steps aside."""
    try:
        scan = scan_file(path)
    except (Unreadable, UnicodeDecodeError, OSError):
        return None
    modules = _with_build_targets(scan.modules, options)
    if modules is None:
        return []  # target-less modules and no target: the compile stops with an error
    return planned_dumps(modules, options, options.host_code == "compile" and scan.host)


def mlir_outputs(path, options):
    """The dump files a compile with `options` writes, as mlir-opt reads the file (raises CompileError)."""
    loaded = sources.load(path, options)
    plan(loaded.modules, path, options)
    return planned_dumps(loaded.modules, options, loaded.has_host_code)


def planned_outputs(path, options):
    """Dump file names (relative to the dump folder) a compile of `path` with `options` writes, in order: the
    scan's prediction where it is certain, else mlir-opt's reading. [] for input the compile rejects anyway
    (it then reports the error with file and line)."""
    try:
        options = check_options(path, options)
    except CompileError:
        return []
    found = fast_outputs(path, options)
    if found is not None:
        return found
    try:
        return mlir_outputs(path, options)
    except CompileError:
        return []


def planned_libraries(path, output, options):
    """The bitcode files a library compile of `path` writes with prefix `output` ([(path, target, chip)]:
    planning.library_files), for the modules the scan finds where it is certain, else mlir-opt; [] for input
    the compile rejects anyway."""
    try:
        options = check_options(path, options)
        try:
            modules = _with_build_targets(scan_file(path).modules, options) or []
        except (Unreadable, UnicodeDecodeError, OSError):
            modules = sources.load(path, options).modules
    except CompileError:
        return []
    return library_files(modules, output, options)


def predicted_libraries(path, options, environment=None):
    """Sorted paths of every bitcode file a compile of `path` may link (device libraries, `link = [...]`
    files), from the scan and the target hooks; where the scan steps aside, every device library of every
    target. Deterministic per content and settings, so a build tool can make them dependencies."""
    found = set()
    try:
        scan = scan_file(path)
        modules = _with_build_targets(scan.modules, options) or scan.modules
        for module, original in zip(modules, scan.modules):
            for attr in module.targets:
                found.update(attr.target.codegen.predicted_libraries(attr, module.symbols, module.ops,
                                                                     not original.targets, options, environment))
    except (Unreadable, UnicodeDecodeError, OSError):
        everything = frozenset(("__ocml_", "__ockl_", "printf", "__atomic_work_item_fence"))
        for target in TARGETS.values():
            attr = TargetAttr(target, "", {})
            found.update(target.codegen.predicted_libraries(attr, everything, frozenset(), True, options, environment))
    return sorted(found)


def uses_build_target(path):
    """Whether the build's target/chip/features/O settings affect `path` (some module carries no target, or
    kernels are outlined). Unreadable files count as affected, so a signature is never too small."""
    try:
        return scan_file(path).lowering
    except (Unreadable, UnicodeDecodeError, OSError):
        return True


def runs_mlir_opt(path, options):
    """Whether the compile of `path` runs mlir-opt (a lowering, or a file not cut straight from its text), and so
    mlir-translate in its worker too: a build's workers start both tools' fork servers ahead for it. Unreadable
    files count as running it (the compile's read reports why)."""
    if options is not None and options.lowering:
        return True
    try:
        return not scan_file(path).direct
    except (Unreadable, UnicodeDecodeError, OSError):
        return True


def tools_run(path, options):
    """The names of the MLIR and LLVM tools the compile of `path` with `options` runs, as far as the scan tells
    (a build's workers start their fork servers ahead, while the build files are read): mlir-opt and
    mlir-translate where it lowers (`runs_mlir_opt`), each module target's own (`Toolchain.runs`), and the
    release llc that may generate a large module's ISA (mlirgpu.llvm.backend)."""
    from ..llvm import backend

    names = {"mlir-opt", "mlir-translate"} if runs_mlir_opt(path, options) else set()
    try:
        modules = scan_file(path).modules
    except (Unreadable, UnicodeDecodeError, OSError):  # mlir-opt reads it: only the build's target is known
        modules = ()
    attached = {attr.target for module in modules for attr in module.targets}
    if options is not None and options.target and not (modules and all(module.targets for module in modules)):
        attached.add(TARGETS[options.target])
    for target in attached:
        names.update(target.toolchain.runs)
    if attached and backend.may_run_llc():
        names.add("llc")
    return tuple(sorted(names))


def pieces_key(modules):
    """What identifies the pieces of a source cut directly (a batch translation of other pieces is no use)."""
    return hashlib.sha256("\0".join(m.text for m in modules).encode("utf-8")).hexdigest()


def _names_untranslated_dialect(*spans):
    """Whether the text of one of `spans` ((text, start, end); comments and strings included: a false match only
    costs a read by mlir-opt) names `#dialect.` or `!dialect.` of a dialect mlir-translate does not load."""
    translated = TRANSLATED_DIALECTS | {target.attribute.split(".")[0] for target in TARGETS.values()}
    return any(name not in translated for span in spans for name in mlirtext.dialect_prefixes(*span))


def direct_source(path, options):
    """The file's gpu.modules cut straight from its text, when that is as exact as normalising it with mlir-opt
    (see `Scan.direct`). Each piece is the file's aliases, the module at its column, and what follows the top
    module (location aliases, the resource trailer),
    so `mlir-translate` alone parses, verifies and translates it; each remembers its line for messages. Pieces
    hold no debug information (the scan declines that: their line numbers are not the file's). Else None, also
    when the text names an attribute or type of a dialect mlir-translate does not load: it takes those as
    opaque (see mlirtools), so mlir-opt reads the file first and refuses them where they are wrong. A piece gets
    none of the file's comments, and its resource trailer only when it names a `dense_resource` (a 48 MiB blob
    that one module uses is not copied, and parsed, for each of a thousand others)."""
    try:
        scan = scan_file(path)
        if not scan.direct:
            return None
        text, digest = sourcefile.read_text(path)
    except (Unreadable, UnicodeDecodeError, OSError):
        return None
    if options is not None:  # a compile's own read, its last (None: a translation ahead, before the compile's)
        _scans.forget(digest)
    prelude, suffix, (trailer_start, trailer_end) = mlirtext.file_parts(text, scan.prelude_start, scan.prelude_end,
                                                                        scan.suffix_start)
    # The trailer starts with `{`, which no match holds or follows: read apart, not joined (a 48 MiB copy).
    shared = prelude + "".join(text[m.start : m.end] for m in scan.modules) + suffix
    if _names_untranslated_dialect((shared,), (text, trailer_start, trailer_end)):
        return None
    trailer = None  # its text, sliced for the first piece that names a resource
    pieces, line, counted = [], 1, 0
    for module in scan.modules:
        line += text.count("\n", counted, module.start)
        counted = module.start
        column = module.start - (text.rfind("\n", 0, module.start) + 1)
        piece = prelude + "\n" + " " * column + text[module.start : module.end] + "\n" + suffix + "\n"
        if trailer_end > trailer_start and "dense_resource<" in piece:  # only a module using resources reads them
            trailer = text[trailer_start:trailer_end] if trailer is None else trailer
            piece += trailer + "\n"
        pieces.append(sources.GpuModule(module.name, line, piece, module.targets, module.handler, direct=True))
    sourcefile.forget()  # the compile reads its pieces from now on
    return sources.Source(path, pieces)
