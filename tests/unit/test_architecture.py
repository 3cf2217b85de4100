"""The architecture is checked, not hoped for: the import-linter layers of pyproject.toml hold, the package has no
import cycle, the compiler core neither forks nor opens sockets, and no module outside `mlirgpu.targets` names
a target (a target defined outside the package: tests/build/test_target_plugins.py)."""
import ast
import contextlib
import io
import itertools
import os
import re

import grimp
from importlinter.cli import lint_imports

from corpusutil import ROOT

PACKAGE = os.path.join(ROOT, "site_scons", "mlirgpu")


def test_import_linter_contract_holds():
    """What `lint-imports` checks, run in this process (the package is on sys.path here)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = lint_imports(config_filename=os.path.join(ROOT, "pyproject.toml"), no_cache=True)
    assert status == 0 and "3 kept, 0 broken" in printed.getvalue(), printed.getvalue()


def test_the_folders_are_the_layers():
    """Every module is in a subpackage named by the layers contract, except the package's face (the lazy API and
    the SCons tool's entry, the command's `-m` entry) and the vocabulary every layer speaks (errors, version,
    options): a new module must pick its room."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        contracts = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    layers = {name.strip() for contract in contracts if contract["type"] == "layers"
              for row in contract["layers"] for name in row.split("|")}
    face = {"__init__.py", "__main__.py", "errors.py", "version.py", "compile_options.py"}
    loose = sorted(name for name in os.listdir(PACKAGE) if name.endswith(".py") and name not in face)
    assert loose == []
    subpackages = {f"mlirgpu.{name}" for name in os.listdir(PACKAGE)
                   if os.path.isfile(os.path.join(PACKAGE, name, "__init__.py"))}
    assert subpackages - {"mlirgpu.cmake"} <= layers, subpackages - layers
    assert {f"mlirgpu.{name[:-3]}" for name in face - {"__init__.py", "__main__.py"}} <= layers


def test_no_import_cycle():
    graph = grimp.build_graph("mlirgpu")
    modules = sorted(graph.modules)
    cycles = [(a, b) for a, b in itertools.combinations(modules, 2)
              if graph.chain_exists(importer=a, imported=b) and graph.chain_exists(importer=b, imported=a)
              and "mlirgpu" not in (a, b)]  # the package itself only names its modules lazily
    assert cycles == []


# What forks or opens sockets: the speed machinery's (execution/, server/), never the compiler core's.
_FORKING_MODULES = {"multiprocessing", "socket", "_socket", "socketserver", "asyncio", "concurrent.futures.process"}
_FORKING_CALLS = {"fork", "forkpty", "register_at_fork"}  # of `os`
CORE = ("pipeline", "targets", "llvm")


def _forks_or_sockets(text):
    """Each place in a module's `text` that forks or opens a socket: an import of a forking or socket module
    (directly, from it, or by name through __import__ / importlib.import_module), or a use of os.fork and its
    kin; as "line: what"."""
    found = []
    forking = lambda name: any(name == module or name.startswith(module + ".") for module in _FORKING_MODULES)  # noqa: E731
    for node in ast.walk(ast.parse(text)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if forking(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if forking(node.module) else []
            names += [f"{node.module}.{alias.name}" for alias in node.names
                      if node.module == "os" and alias.name in _FORKING_CALLS or alias.name == "ProcessPoolExecutor"]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in _FORKING_CALLS or node.attr == "ProcessPoolExecutor" \
                    or node.value.id in _FORKING_MODULES:
                names = [f"{node.value.id}.{node.attr}"]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                names = [node.args[0].value] if forking(node.args[0].value) else []
        found += [f"{node.lineno}: {name}" for name in names]
    return sorted(found, key=lambda entry: int(entry.split(":")[0]))


def test_the_forking_check_finds_every_form():
    """The check below finds each way a module could fork or open a socket (else it would pass for nothing)."""
    probe = "\n".join(["import os", "import _socket", "import socket as s", "from multiprocessing import Pool",
                        "from os import fork", "import concurrent.futures.process",
                        "from concurrent.futures import ProcessPoolExecutor", "os.fork()", "os.forkpty()",
                        "__import__('socket')", "importlib.import_module('multiprocessing.pool')",
                        "_socket.socketpair()", "import selectors, subprocess, select"])
    assert [entry.split(": ")[0] for entry in _forks_or_sockets(probe)] == [str(n) for n in range(2, 13)]


def test_the_core_never_forks_nor_opens_sockets():
    """pipeline/, targets/ and llvm/ hold no os.fork, multiprocessing or socket (imports or uses, `_socket` too):
    forks and sockets are the speed machinery's (execution/forks is the one fork-and-return; execution/fanout
    the forked job runner the front ends pass), which the import-linter contract also says."""
    found = []
    for room in CORE:
        for folder, dirs, files in os.walk(os.path.join(PACKAGE, room)):
            dirs[:] = [name for name in dirs if name != "__pycache__"]
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8") as handle:
                        found += [f"{os.path.relpath(path, PACKAGE)}:{entry}" for entry in _forks_or_sockets(handle.read())]
    assert found == []


def test_no_module_outside_targets_names_a_target():
    from mlirgpu.targets import BUILT_IN

    names = "|".join(re.escape(word) for target in BUILT_IN
                     for word in (target.name, target.attribute.split(".")[0], type(target).__name__))
    pattern = re.compile(rf"(?<![/\-])\b({names})\b(?![/\-])", re.I)  # not a toolkit path (`nvvm/libdevice`)
    found = []
    for folder, _dirs, files in os.walk(PACKAGE):
        if os.path.relpath(folder, PACKAGE).split(os.sep)[0] in ("targets", "__pycache__"):
            continue
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    for number, line in enumerate(handle, 1):
                        if pattern.search(line):
                            found.append(f"{name}:{number}: {line.strip()}")
    assert found == []


def test_the_design_page_names_every_module():
    """docs/design.md's map of the rooms names every subpackage and module, so the map cannot fall behind."""
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as handle:
        words = set(re.findall(r"[A-Za-z_]+", handle.read()))
    missing = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        if folder != PACKAGE and os.path.basename(folder) not in words:
            missing.append(os.path.relpath(folder, PACKAGE))
        missing += [os.path.relpath(os.path.join(folder, name), PACKAGE) for name in files
                    if name.endswith(".py") and name not in ("__init__.py", "__main__.py") and name[:-3] not in words]
    assert missing == []


def test_no_module_is_over_450_lines():
    """A module that grows past this holds more than one concern: split it by concern."""
    long = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    count = sum(1 for _ in handle)
                if count > 450:
                    long.append(f"{os.path.relpath(os.path.join(folder, name), PACKAGE)}: {count}")
    assert long == []
