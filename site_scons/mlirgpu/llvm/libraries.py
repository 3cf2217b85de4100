"""Bitcode device libraries in the LLVM worker: cleaned, indexed, and reduced to what a module needs.

Upstream links each library with `LinkOnlyNeeded`, so only the definitions a module reaches are imported. Parsing
all of libdevice (or ocml) for every module costs more than the rest of a small module's compile, so a library is
parsed and printed once, indexed (which definition refers to which symbol), and for each module only the closure
of what it declares is kept: the reduced library links to exactly the same result (named metadata and module
flags are kept whole). Reduced libraries are cached in the worker and on disk, keyed by the library's content and
the closure, so builds after the first parse only a few kilobytes per module.
"""
import hashlib
import os
import re

import llvmlite
import llvmlite.binding as llvm

from ..cache import store

_DEFINE = re.compile(r'^define [^@]*@("(?:[^"\\]|\\.)*"|[\w.$\-]+)\(')
_GLOBAL = re.compile(r'^@("(?:[^"\\]|\\.)*"|[\w.$\-]+) = (.*)$')
_REF = re.compile(r'@("(?:[^"\\]|\\.)*"|[\w.$\-]+)')

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
        self.recipe = hashlib.sha256(repr((llvmlite.__version__, hashlib.sha256(self.data).hexdigest(),
                                           self.strip_named, triple, data_layout)).encode()).hexdigest()
        self._lines = None
        self._defs = None
        self._graph = None
        self._reduced = {}

    def _index(self):
        """The library as text (use-list order kept) with its definitions: name -> (first, last line, refs)."""
        if self._lines is not None:
            return
        llvm.set_option("mlirgpu", "-preserve-ll-uselistorder=true")
        try:
            with llvm.create_context() as scratch, llvm.parse_bitcode(self.data, context=scratch) as module:
                text = str(module)  # the module closed, then its context: never left to finalizers
        finally:
            llvm.set_option("mlirgpu", "-preserve-ll-uselistorder=false")
        lines = []
        for line in text.splitlines():
            if any(line.startswith(f"!{name} = ") for name in self.strip_named):
                continue
            if self.triple and line.startswith("target triple = "):
                line = f'target triple = "{self.triple}"'
            elif self.data_layout and line.startswith("target datalayout = "):
                line = f'target datalayout = "{self.data_layout}"'
            lines.append(line)
        defs = {}
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
            if variable and not variable.group(2).startswith("external "):
                appending = variable.group(2).startswith("appending ")
                defs[variable.group(1)] = (i, i, set(_REF.findall(variable.group(2))), appending)
            i += 1
        self._lines, self._defs = lines, defs

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
        todo = [name for name in declared if name in graph] + [n for n, d in graph.items() if d[1]]
        seen = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo += [ref for ref in graph[name][0] if ref in graph and ref not in seen]
        return frozenset(seen)

    def reduced(self, declared):
        """Bitcode of the library with only the definitions reachable from `declared`."""
        key = self._closure_key(declared)
        if key in self._reduced:
            return self._reduced[key]
        name = hashlib.sha256(f"{self.recipe}:{','.join(sorted(key[1]))}".encode()).hexdigest() + ".bc"
        data = store.read_bytes(os.path.join(cache_dir(), name))
        if data is None:
            data = self._build_reduced(key[1])
            store.write_bytes(os.path.join(cache_dir(), name), data)
        self._reduced[key] = data
        return data

    def _closure_key(self, declared):
        return (self.recipe, self.closure(declared))

    def _build_reduced(self, keep):
        self._index()
        drop = set()
        for name, (first, last, _refs, _appending) in self._defs.items():
            if name not in keep:
                drop.update(range(first, last + 1))
        # Module-level use-list directives may name dropped users; the linker rebuilds those lists in the
        # destination anyway (directives inside kept functions stay).
        text = "\n".join(line for i, line in enumerate(self._lines)
                         if i not in drop and not line.startswith("uselistorder"))
        with llvm.create_context() as scratch, llvm.parse_assembly(text + "\n", context=scratch) as module:
            return module.as_bitcode()


def reduced_bitcode(path, strip_named, triple, data_layout, declared):
    """Bitcode of the library at `path`, reduced to what `declared` (names the destination declares) reaches (the
    caller parses it into its job's context, whose arena owns the module: mlirgpu.llvm.arena).

    Known libraries are recognised by their content (read on every use: a worker lives across edits)."""
    with open(path, "rb") as handle:
        data = handle.read()
    key = (hashlib.sha256(data).digest(), tuple(strip_named), triple, data_layout)
    library = _libraries.get(key)
    if library is None:
        library = _libraries[key] = Library(data, strip_named, triple, data_layout)
    return library.reduced(declared)
