"""Finding the external tools and libraries, their identities, and install hints when one is missing.

Search order, first hit wins (no other absolute paths are assumed). The variables are read from a search
environment: a build tool's own execution environment first (SCons's `env['ENV']`), then this process's.
- MLIR tools (`mlir-opt`, `mlir-translate`): `$MLIR_BIN`, then `mlir-opt-22` / `mlir-opt` on PATH, then Debian's
  `/usr/lib/llvm-22/bin` (package mlir-22-tools).
- LLVM tools (`llvm-mc`, `ld.lld`): `$LLVM_BIN`, PATH (`llvm-mc-22`, `ld.lld-22`, then unversioned), then
  `/usr/lib/llvm-22/bin` (packages llvm-22, lld-22). For ROCDL, `<rocm>/llvm/bin/ld.lld` is preferred, as upstream.
- CUDA toolkit (`ptxas`, `fatbinary`, `nvvm/libdevice/libdevice.10.bc`): `--toolkit`, `$CUDA_PATH`, `$CUDA_HOME`,
  `$CUDA_ROOT`, the folder above `ptxas` on PATH, `/usr/local/cuda`, then the PyPI wheels `nvidia-cuda-nvcc` +
  `nvidia-nvvm` (installed as `nvidia/cu13/{bin,nvvm}`). A root counts only if it has ptxas and libdevice.
- ROCm device libraries (`amdgcn/bitcode/*.bc`): `--toolkit`, `$ROCM_PATH`, `$ROCM_ROOT`, `$ROCM_HOME`,
  `/opt/rocm`, then Debian's `rocm-device-libs` location `/usr/lib/<multiarch>`.

What a tool prints (`--version`, processor lists) and the hash of its bytes are cached on disk per tool file,
keyed by its identity on disk including the inode and change time, which `cp -p`, `rsync -a` and `tar x` cannot
keep: a tool replaced or upgraded in place is read again.
"""
import functools
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys

from . import store
from .errors import ToolMissing

LLVM_MAJOR = 22
DEBIAN_LLVM_BIN = f"/usr/lib/llvm-{LLVM_MAJOR}/bin"
SEARCH_VARIABLES = ("PATH", "MLIR_BIN", "LLVM_BIN", "CUDA_PATH", "CUDA_HOME", "CUDA_ROOT", "ROCM_PATH",
                    "ROCM_ROOT", "ROCM_HOME")

INSTALL = {
    "mlir": f"apt install mlir-{LLVM_MAJOR}-tools (Debian 13; tools/bootstrap does it) or set MLIR_BIN to its folder",
    "llvm": f"apt install llvm-{LLVM_MAJOR} (Debian 13) or set LLVM_BIN to its folder",
    "lld": f"apt install lld-{LLVM_MAJOR} (Debian 13) or set LLVM_BIN to its folder",
    "cuda": "pip install nvidia-cuda-nvcc nvidia-nvvm, or install a CUDA toolkit and set CUDA_PATH (or the "
            "toolkit option)",
    "rocm": "apt install rocm-device-libs, or set ROCM_PATH (or the toolkit option) to a ROCm root",
}
_PACKAGE_OF = {"mlir-opt": "mlir", "mlir-translate": "mlir", "llvm-mc": "llvm", "ld.lld": "lld"}


def search_environment(overrides=None):
    """The variables tool discovery reads, as a hashable tuple: `overrides` (a build's execution environment)
    first, then this process's environment; PATH is the overrides' PATH followed by this process's."""
    values = []
    for name in SEARCH_VARIABLES:
        own = (overrides or {}).get(name)
        here = os.environ.get(name)
        if name == "PATH":
            value = os.pathsep.join(part for part in (own, here) if part)
        else:
            value = own if own else here
        values.append((name, value or ""))
    return tuple(values)


def _env(environment):
    return dict(environment if environment is not None else search_environment())


def _which(name, environment):
    return shutil.which(name, path=_env(environment)["PATH"] or None)


def _executable(path):
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def llvm_tool(name, environment=None):
    """Absolute path of an MLIR/LLVM tool of the pinned major version."""
    return _llvm_tool(name, environment if environment is not None else search_environment())


@functools.lru_cache(maxsize=None)
def _llvm_tool(name, environment):
    env = dict(environment)
    variable = "MLIR_BIN" if name.startswith("mlir") else "LLVM_BIN"
    unversioned = _which(name, environment)
    candidates = [os.path.join(env[variable], name)] if env[variable] else []
    candidates += [_which(f"{name}-{LLVM_MAJOR}", environment), os.path.join(DEBIAN_LLVM_BIN, name), unversioned]
    for candidate in candidates:
        found = _executable(candidate)
        if found and (candidate != unversioned or _major_of(found) == LLVM_MAJOR):
            return found
    package = _PACKAGE_OF.get(name, "llvm")
    raise ToolMissing(f"{name} (LLVM {LLVM_MAJOR}) not found", fix=INSTALL[package])


def _major_of(tool):
    match = re.search(r"LLVM version (\d+)", tool_output(tool, ("--version",)) or "")
    return int(match.group(1)) if match else None


def _stat_key(path):
    """What identifies a file's bytes without reading them: inode and change time included (a replaced or
    rewritten file gets a new one, whatever its modification time says)."""
    real = os.path.realpath(path)
    stat = os.stat(real)
    return f"{real}|{stat.st_dev}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"


def _tool_cache():
    return os.path.join(store.cache_root(), "tools.json")


_tool_memory = {}


def _cached(key, compute):
    """`compute()` remembered in this process and on disk under `key` (None results are not kept)."""
    if key in _tool_memory:
        return _tool_memory[key]
    known = store.read_json(_tool_cache())
    known = known if isinstance(known, dict) else {}
    value = known.get(key)
    if not isinstance(value, str):
        value = compute()
        if value is None:
            return None
        known[key] = value
        store.write_json(_tool_cache(), known)
    _tool_memory[key] = value
    return value


def file_fact(path, kind, compute):
    """`compute()` (a str) remembered per identity of the file at `path` (see `_stat_key`), or None."""
    try:
        key = f"{kind}|{_stat_key(path)}"
    except OSError:
        return None
    return _cached(key, compute)


def tool_output(tool, args):
    """What `TOOL ARGS...` prints (stdout then stderr), or None when it cannot run; cached per tool file."""
    try:
        key = f"output|{_stat_key(tool)}|{' '.join(args)}"
    except OSError:
        return None

    def run():
        from .process import bounded

        try:
            result = bounded([tool, *args], 10)
        except (OSError, subprocess.SubprocessError):
            return None
        return (result.stdout + result.stderr).decode("utf-8", "replace")

    return _cached(key, run)


def file_digest(path):
    """sha256 of a file's bytes, cached per file identity (tools are read once after each change)."""
    try:
        key = f"sha256|{_stat_key(path)}"
    except OSError:
        return "missing"

    def digest():
        hasher = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        return hasher.hexdigest()

    return _cached(key, digest)


def tool_version(tool):
    """First line of `TOOL --version` that names a version."""
    out = tool_output(tool, ("--version",))
    if out is None:
        return "unknown"
    lines = [line.strip() for line in out.splitlines() if re.search(r"[Vv]ersion|release", line)]
    return lines[0] if lines else (out.strip().splitlines()[0] if out.strip() else "unknown")


def identity(tool):
    """A tool's identity for signatures and records: its version line and the hash of its bytes."""
    return f"{tool_version(tool)} [{file_digest(tool)[:16]}]"


def llvmlite_library():
    """The LLVM library the stages run in, found without loading it (a build tool's process need not)."""
    import importlib.util

    spec = importlib.util.find_spec("llvmlite")
    folder = os.path.join(os.path.dirname(spec.origin), "binding") if spec and spec.origin else ""
    found = sorted(glob.glob(os.path.join(folder, "libllvmlite*")))
    return found[0] if found else ""


def llvmlite_identity():
    try:
        from importlib.metadata import version

        release = version("llvmlite")
    except Exception:  # noqa: BLE001 - metadata missing in an unusual install: the hash still tells
        release = "unknown"
    library = llvmlite_library()
    return f"llvmlite {release} [{file_digest(library)[:16] if library else 'missing'}]"


def nvcc_wheel_roots():
    """CUDA roots the PyPI wheels (nvidia-cuda-nvcc) installed on the import path."""
    roots = []
    for entry in sys.path:
        roots += glob.glob(os.path.join(entry, "nvidia", "cuda_nvcc"))
        roots += glob.glob(os.path.join(entry, "nvidia", "cu*"))
    return [root for root in roots if os.path.isfile(os.path.join(root, "bin", "ptxas"))]


def cuda_toolkit(explicit=None, environment=None):
    """The CUDA toolkit root: `explicit` when given (as upstream's toolkit=), else the first root found that
    holds both bin/ptxas and libdevice (None when there is none)."""
    if explicit:
        return os.path.abspath(explicit)
    return _cuda_toolkit(environment if environment is not None else search_environment())


@functools.lru_cache(maxsize=None)
def _cuda_toolkit(environment):
    env = dict(environment)
    candidates = [env[var] for var in ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT")]
    on_path = _which("ptxas", environment)
    if on_path:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(on_path))))
    candidates.append("/usr/local/cuda")
    candidates += nvcc_wheel_roots()
    for root in candidates:
        if root and os.path.isfile(os.path.join(root, "bin", "ptxas")) and libdevice(root):
            return os.path.abspath(root)
    return None


def libdevice(toolkit):
    """Path of libdevice.10.bc in a CUDA toolkit, or None."""
    if not toolkit:
        return None
    path = os.path.join(toolkit, "nvvm", "libdevice", "libdevice.10.bc")
    return path if os.path.isfile(path) else None


def cuda_tool(name, toolkit):
    """ptxas or fatbinary from the toolkit, with an install hint."""
    path = _executable(os.path.join(toolkit, "bin", name)) if toolkit else None
    if not path:
        raise ToolMissing(f"{name} not found (no CUDA toolkit)", fix=INSTALL["cuda"])
    return path


def ptxas_chips(ptxas):
    """The real chips (`sm_*`) this ptxas accepts, oldest first (from `ptxas --help`)."""
    text = tool_output(ptxas, ("--help",)) or ""
    chips = set(re.findall(r"'(sm_\d+[a-z]?)'", text))
    return sorted(chips, key=lambda chip: (int(re.sub(r"\D", "", chip)), chip))


def rocm_toolkit(explicit=None, environment=None):
    """The ROCm root: `explicit` when given, else the first root found holding amdgcn/bitcode, or None."""
    if explicit:
        return os.path.abspath(explicit)
    return _rocm_toolkit(environment if environment is not None else search_environment())


@functools.lru_cache(maxsize=None)
def _rocm_toolkit(environment):
    env = dict(environment)
    candidates = [env[var] for var in ("ROCM_PATH", "ROCM_ROOT", "ROCM_HOME")]
    candidates.append("/opt/rocm")
    candidates += sorted(glob.glob("/usr/lib/*/amdgcn/bitcode/ocml.bc"))
    for root in candidates:
        if root and root.endswith("ocml.bc"):
            root = os.path.dirname(os.path.dirname(os.path.dirname(root)))
        if root and os.path.isdir(os.path.join(root, "amdgcn", "bitcode")):
            return os.path.abspath(root)
    return None


def rocm_library(toolkit, name):
    """Path of `<toolkit>/amdgcn/bitcode/<name>.bc`, or a ToolMissing error."""
    path = os.path.join(toolkit, "amdgcn", "bitcode", f"{name}.bc") if toolkit else None
    if not path or not os.path.isfile(path):
        raise ToolMissing(f"ROCm device library {name}.bc not found", fix=INSTALL["rocm"])
    return path


def lld(rocm_root, environment=None):
    """ld.lld for HSACO linking: ROCm's own when it has one (as upstream), else lld-22."""
    if rocm_root:
        own = _executable(os.path.join(rocm_root, "llvm", "bin", "ld.lld"))
        if own:
            return own
    return llvm_tool("ld.lld", environment)


def forget():
    """Drop what was found (a worker does this when its caller's environment changed)."""
    for cached in (_llvm_tool, _cuda_toolkit, _rocm_toolkit):
        cached.cache_clear()
