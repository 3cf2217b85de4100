"""Bitcode device libraries in the LLVM worker: cleaned, indexed, and reduced to what a module needs.

Upstream links each library with `LinkOnlyNeeded`, so only the definitions a module reaches are imported. Parsing
all of libdevice (or ocml) for every module costs more than the rest of a small module's compile, so a library is
parsed and printed once, indexed (which definition refers to which symbol), and for each module only the closure
of what it declares is kept: the reduced library links to exactly the same result (named metadata and module
flags are kept whole). Reduced libraries are cached in the worker and on disk, keyed by the library's content and
the closure, so builds after the first parse only a few kilobytes per module.

The work around so small a link must stay small too. Per closure a `Plan` is made once per process, which also
leaves out the declarations that nothing left in the library references and that name nothing in the module
(most of what a reduced libdevice holds: hundreds of intrinsic declarations, parsed and walked for every module
otherwise). The library file is known by its identity on disk (toolchain.file_digest), not read and hashed for
every module, and each closure is remembered per set of declared names it starts from.
"""
import contextlib
import hashlib
import os
import re

import llvmlite
import llvmlite.binding as llvm

from . import toolchain
from ..cache import store
from ..util.fsutil import LIBRARY_INPUT, read_input

# Strings unrolled (see mlirgpu.util.mlirtext: a repeated group backtracks per character).
_DEFINE = re.compile(r'^define [^@]*@("[^"\\]*(?:\\.[^"\\]*)*"|[\w.$\-]+)\(')
_DECLARE = re.compile(r'^declare [^@]*@([\w.$\-]+)\(')  # a quoted name is never left out (see Plan)
_GLOBAL = re.compile(r'^@("[^"\\]*(?:\\.[^"\\]*)*"|[\w.$\-]+) = (.*)$')
_INDIRECT = re.compile(r"(?:[\w()]+ )*?(?:alias|ifunc) ")  # what follows `@name = ` on an alias or ifunc line
_REF = re.compile(r'@("[^"\\]*(?:\\.[^"\\]*)*"|[\w.$\-]+)')

_libraries = {}


def cache_dir():
    """Where reduced libraries are kept: `<cache root>/libraries` (see store.cache_root)."""
    return os.path.join(store.cache_root(), "libraries")


class Library:
    """One library file as one recipe (named metadata to erase, triple and data layout to set) prepares it."""

    def __init__(self, data, strip_named, triple, data_layout):
        self.data = data
        self.strip_named = tuple(strip_named)
        self.triple = triple
        self.data_layout = data_layout
        self.digest = hashlib.sha256(data).hexdigest()
        self.recipe = hashlib.sha256(repr((llvmlite.__version__, self.digest, self.strip_named, triple,
                                           data_layout)).encode()).hexdigest()
        self._lines = None
        self._defs = None
        self._declarations = None
        self._other_refs = None
        self._graph = None
        self._closures = {}
        self._plans = {}

    def _index(self):
        """The library as text (use-list order kept) with its definitions: name -> (first, last line, refs,
        appending); the declarations a reduced library may leave out (name -> line), and what the lines outside
        definitions and those declarations refer to."""
        if self._lines is not None:
            return
        with _parsed(self.data) as module:
            text = str(module)
        lines = []
        for line in text.splitlines():
            if any(line.startswith(f"!{name} = ") for name in self.strip_named):
                continue
            if self.triple and line.startswith("target triple = "):
                line = f'target triple = "{self.triple}"'
            elif self.data_layout and line.startswith("target datalayout = "):
                line = f'target datalayout = "{self.data_layout}"'
            lines.append(line)
        defs, declarations, other_refs = {}, {}, set()
        i = 0
        while i < len(lines):
            line = lines[i]
            function = _DEFINE.match(line)
            if function:
                end = i
                while lines[end] != "}":
                    end += 1
                body = "\n".join(lines[i : end + 1])
                defs[function.group(1)] = (i, end, set(_REF.findall(body)), False)
                i = end + 1
                continue
            variable = _GLOBAL.match(line)
            declaration = _DECLARE.match(line)
            if variable and not variable.group(2).startswith("external "):
                appending = variable.group(2).startswith("appending ")
                defs[variable.group(1)] = (i, i, set(_REF.findall(variable.group(2))), appending)
            elif declaration and "%" not in line and "!" not in line and _REF.findall(line) == [declaration.group(1)]:
                declarations[declaration.group(1)] = i  # naming no type, metadata or other value
            elif not line.startswith("uselistorder"):  # module-level directives are never kept (_reduced)
                other_refs.update(_REF.findall(line))
            i += 1
        self._lines, self._defs, self._declarations, self._other_refs = lines, defs, declarations, other_refs

    def graph(self):
        """{definition: (referenced names, always linked)}, kept on disk so a new worker need not print the
        library to know what a module's declarations reach."""
        if self._graph is None:
            name = f"{self.recipe}.graph.json"
            cached = store.read_json(os.path.join(cache_dir(), name))
            try:
                self._graph = {k: (set(v[0]), bool(v[1])) for k, v in cached.items()}
            except (AttributeError, TypeError, ValueError, IndexError):  # missing, or not what we write
                self._graph = None
            if self._graph is None:
                self._index()
                self._graph = {k: (refs, appending) for k, (_f, _l, refs, appending) in self._defs.items()}
                store.write_json(os.path.join(cache_dir(), name),
                                 {k: [sorted(v[0]), v[1]] for k, v in self._graph.items()})
        return self._graph

    def closure(self, declared):
        """Names of the definitions reachable from `declared` (plus appending globals, which always link)."""
        graph = self.graph()
        roots = frozenset(name for name in declared if name in graph)
        found = self._closures.get(roots)
        if found is None:
            todo = list(roots) + [n for n, d in graph.items() if d[1]]
            seen = set()
            while todo:
                name = todo.pop()
                if name in seen:
                    continue
                seen.add(name)
                todo += [ref for ref in graph[name][0] if ref in graph and ref not in seen]
            found = self._closures[roots] = frozenset(seen)
        return found

    def plan(self, declared):
        """The `Plan` of the library reduced to what `declared` reaches."""
        keep = self.closure(declared)
        plan = self._plans.get(keep)
        if plan is None:
            plan = self._plans[keep] = Plan(self, keep)
        return plan

    def facts(self, keep):
        """What a `Plan` of the closure `keep` needs to know before it reads any bitcode: the declarations it may
        leave out, and whether it holds aliases or ifuncs; kept on disk beside the reduced libraries."""
        path = os.path.join(cache_dir(), self._entry(keep, "facts") + ".json")
        cached = store.read_json(path)
        if isinstance(cached, dict) and isinstance(cached.get("droppable"), list) and \
                all(isinstance(name, str) for name in cached["droppable"]) and isinstance(cached.get("indirect"), bool):
            return frozenset(cached["droppable"]), cached["indirect"]
        self._index()  # missing, or not what we write
        referenced = set(self._other_refs).union(*(self._defs[name][2] for name in keep))
        droppable = frozenset(name for name in self._declarations if name not in referenced)
        indirect = any(_INDIRECT.match(_GLOBAL.match(self._lines[self._defs[name][0]]).group(2))
                       for name in keep if not _DEFINE.match(self._lines[self._defs[name][0]]))
        store.write_json(path, {"droppable": sorted(droppable), "indirect": indirect})
        return droppable, indirect

    def reduced(self, keep, without=frozenset()):
        """Bitcode of the library with only the definitions named in `keep` (a closure), and without the
        declarations named in `without`."""
        path = os.path.join(cache_dir(), self._entry(keep, *(["without", *sorted(without)] if without else []))
                            + ".bc")
        data = store.read_bytes(path)
        if data is None:
            self._index()
            drop = {self._declarations[name] for name in without}
            for name, (first, last, _refs, _appending) in self._defs.items():
                if name not in keep:
                    drop.update(range(first, last + 1))
            # Module-level use-list directives may name dropped users; the linker rebuilds those lists in the
            # destination anyway (directives inside kept functions stay).
            data = _assembled(line for i, line in enumerate(self._lines)
                              if i not in drop and not line.startswith("uselistorder"))
            store.write_bytes(path, data)
        return data

    def _entry(self, keep, *more):
        """The name of the cache entry about the closure `keep` (with no `more`: its reduced library)."""
        return hashlib.sha256(":".join([self.recipe, ",".join(sorted(keep)), *more]).encode()).hexdigest()


class Plan:
    """How the library reduced to one closure links: `bitcode(present)` for a module, and whether that holds
    aliases or ifuncs (`indirect`).

    LLVM's linker never imports a declaration, but one that names a value of the destination still acts: it
    merges its visibility and unnamed_addr into that value, and IRLinker's reordering moves a destination global
    variable it names to the end of the destination's globals. A declaration that nothing in the library
    references and that names nothing in the destination does nothing, so the bitcode a module gets leaves those
    out. Declarations whose line names a type or metadata (`%`, `!`), or whose name is quoted, always stay, and
    so does every declaration when the destination's names cannot all be listed (llvmlite lists no aliases)."""

    def __init__(self, library, keep):
        self._library = library
        self._keep = keep
        self._droppable, self.indirect = library.facts(keep)
        self._bitcode = {}

    def bitcode(self, present):
        """The bitcode to link into a module whose functions and global variables are named `present` (None: the
        module may hold values llvmlite cannot list)."""
        kept = self._droppable if present is None else frozenset(n for n in present if n in self._droppable)
        found = self._bitcode.get(kept)
        if found is None:
            found = self._bitcode[kept] = self._library.reduced(self._keep, self._droppable - kept)
        return found


_BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")  # raw bitcode, and the wrapper some tools write


@contextlib.contextmanager
def _parsed(data):
    """A library file's bitcode, or its textual IR (`.ll`, which upstream's parseIRFile takes too), parsed in a
    scratch context, printing with its use-list order; the module is closed, then its context (never left to
    finalizers)."""
    llvm.set_option("mlirgpu", "-preserve-ll-uselistorder=true")
    try:
        with llvm.create_context() as scratch, _parse(data, scratch) as module:
            yield module
    finally:
        llvm.set_option("mlirgpu", "-preserve-ll-uselistorder=false")


def _parse(data, context):
    if data[:4] in _BITCODE_MAGIC:
        return llvm.parse_bitcode(data, context=context)
    return llvm.parse_assembly(data.decode("utf-8", "replace"), context=context)  # a bad byte: LLVM's error


def _assembled(lines):
    """Bitcode of the module whose text is `lines`."""
    with llvm.create_context() as scratch, llvm.parse_assembly("\n".join(lines) + "\n", context=scratch) as module:
        return module.as_bitcode()


def link_plan(path, strip_named, triple, data_layout, declared):
    """The `Plan` of the library at `path` reduced to what `declared` (names the destination declares) reaches
    (the caller parses its bitcode into its job's context, whose arena owns the module: mlirgpu.llvm.arena).

    The file is known by its identity on disk: a worker lives across edits, and reads a changed file again."""
    key = (toolchain.file_digest(path), tuple(strip_named), triple, data_layout)
    library = _libraries.get(key)
    if library is None:
        library = Library(read_input(path, LIBRARY_INPUT), strip_named, triple, data_layout)
        # filed under what was read: a file that changed after its digest was taken is not filed as the old one
        library = _libraries.setdefault((library.digest, *key[1:]), library)
    return library.plan(declared)
