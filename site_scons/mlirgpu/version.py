"""The package's version (part of every signature and record: a new version rebuilds) and what an installation
is made of besides it: the package's Python files and llvmlite's LLVM library. The compile server's fingerprint
(mlirgpu.execution.rendezvous: sizes and times) and the Dask workers' (mlirgpu.execution.dask_fingerprint: contents)
are made of these; every `mlirgpu compile` computes the first, so this module imports nothing."""
import os
import sys

__version__ = "0.1.1"  # 0.1.1: host objects run their constructors under ld.lld too (.init_array)
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def code_files(root=PACKAGE):
    """The package's Python files by folder, {folder: [names of its .py files, sorted]}: the package itself
    first, then every subpackage at any depth in sorted order, so an edit in any of them changes both
    fingerprints."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__" and not name.startswith("."))
        python = sorted(name for name in names if name.endswith(".py"))
        if python:
            found[folder] = python
    return found


def llvmlite_library():
    """The LLVM library the stages run in (llvmlite's), '' if llvmlite is not installed: found where Python's
    import would find the package (the first folder of `sys.path` holding it), without importing or loading
    anything (a build tool's process and the thin client need neither)."""
    for entry in sys.path:
        folder = os.path.join(entry or ".", "llvmlite", "binding")
        if os.path.isdir(folder):
            found = sorted(name for name in os.listdir(folder) if name.startswith("libllvmlite"))
            return os.path.abspath(os.path.join(folder, found[0])) if found else ""
    return ""
