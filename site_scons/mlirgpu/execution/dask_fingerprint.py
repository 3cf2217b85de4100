"""The Dask workers' toolchain fingerprint: what a worker must have to compile for a client, by content (never
by path: machines lay tools out alike or not): this package's version and code, llvmlite's LLVM, the MLIR tools
and every target's tools and device libraries. A client sends a job only to workers of its fingerprint
(mlirgpu.execution.dask_cluster), and a worker refuses a job of another (mlirgpu.execution.dask_worker)."""
import contextlib
import hashlib
import os

from ..errors import CompileError
from ..llvm import toolchain
from ..version import PACKAGE, __version__, code_files


def package_digest():
    """The hash of every Python file of the package, in every subpackage, by path and content."""
    hasher = hashlib.sha256()
    for folder, names in code_files().items():
        for name in names:
            path = os.path.join(folder, name)
            hasher.update(os.path.relpath(path, PACKAGE).encode() + b"\0" + toolchain.file_digest(path).encode())
    return hasher.hexdigest()


def toolchain_files(toolkit=""):
    """The files that shape a compile's bytes besides its inputs: the MLIR tools, every target's tools and
    device libraries (`toolkit`: a compile's --toolkit)."""
    from ..compile_options import CompileOptions
    from ..targets import TARGETS

    options = CompileOptions(toolkit=toolkit)
    files = toolchain.found(*(lambda name=name: toolchain.llvm_tool(name) for name in ("mlir-opt", "mlir-translate")))
    for target in TARGETS.values():
        with contextlib.suppress(CompileError):
            files += target.toolchain.tools(options) + target.toolchain.device_libraries(options)
    return [path for path in files if path]


def fingerprint(toolkit=""):
    """What a worker must have to compile for us: the version and code of this package, llvmlite's LLVM, and
    each toolchain file's name and bytes."""
    parts = [__version__, package_digest(), toolchain.llvmlite_identity()]
    parts += [f"{os.path.basename(os.path.realpath(path))}={toolchain.file_digest(path)}"
              for path in toolchain_files(toolkit)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def own_toolkit(kind):
    """This machine's toolkit of the target named `kind` ('' for none: each target finds its own)."""
    if not kind:
        return ""
    from ..compile_options import CompileOptions
    from ..targets import TARGETS

    return TARGETS[kind].toolchain.toolkit(CompileOptions()) or ""


def worker_fingerprint():
    """This worker's fingerprints (run on each worker by the client): with each target finding its own toolkit
    (''), and with the toolkit of each target given to every target, as a client's --toolkit does."""
    from ..targets import TARGETS

    return {kind: fingerprint(own_toolkit(kind)) for kind in ("", *TARGETS)}
