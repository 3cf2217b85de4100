"""Finding the external tools and libraries, with install hints when one is missing.

Search order, first hit wins (no other absolute paths are assumed):
- MLIR tools (`mlir-opt`, `mlir-translate`): `$MLIR_BIN`, then `mlir-opt-22` / `mlir-opt` on PATH, then Debian's
  `/usr/lib/llvm-22/bin` (package mlir-22-tools).
- LLVM tools (`llvm-mc`, `ld.lld`): `$LLVM_BIN`, PATH (`llvm-mc-22`, `ld.lld-22`, then unversioned), then
  `/usr/lib/llvm-22/bin` (packages llvm-22, lld-22). For ROCDL, `<rocm>/llvm/bin/ld.lld` is preferred, as upstream.
- CUDA toolkit (`ptxas`, `fatbinary`, `nvvm/libdevice/libdevice.10.bc`): `--toolkit`, `$CUDA_PATH`, `$CUDA_HOME`,
  `$CUDA_ROOT`, the folder above `ptxas` on PATH, `/usr/local/cuda`, then the PyPI wheels `nvidia-cuda-nvcc` +
  `nvidia-nvvm` (installed as `nvidia/cu13/{bin,nvvm}`). A root counts only if it has ptxas and libdevice.
- ROCm device libraries (`amdgcn/bitcode/*.bc`): `--toolkit`, `$ROCM_PATH`, `$ROCM_ROOT`, `$ROCM_HOME`,
  `/opt/rocm`, then Debian's `rocm-device-libs` location `/usr/lib/<multiarch>`.
"""
import functools
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from .errors import ToolMissing

LLVM_MAJOR = 22
DEBIAN_LLVM_BIN = f"/usr/lib/llvm-{LLVM_MAJOR}/bin"

PACKAGES = {
    "mlir-opt": f"mlir-{LLVM_MAJOR}-tools",
    "mlir-translate": f"mlir-{LLVM_MAJOR}-tools",
    "llvm-mc": f"llvm-{LLVM_MAJOR}",
    "ld.lld": f"lld-{LLVM_MAJOR}",
}


def _executable(path):
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


@functools.lru_cache(maxsize=None)
def llvm_tool(name):
    """Absolute path of an MLIR/LLVM tool of the pinned major version."""
    env_dir = os.environ.get("MLIR_BIN" if name.startswith("mlir") else "LLVM_BIN")
    candidates = []
    if env_dir:
        candidates.append(os.path.join(env_dir, name))
    candidates += [shutil.which(f"{name}-{LLVM_MAJOR}"), os.path.join(DEBIAN_LLVM_BIN, name), shutil.which(name)]
    for candidate in candidates:
        found = _executable(candidate)
        if found and (candidate != shutil.which(name) or _major_of(found) == LLVM_MAJOR):
            return found
    raise ToolMissing(
        f"{name} (LLVM {LLVM_MAJOR}) not found",
        fix=f"install the Debian package {PACKAGES.get(name, f'llvm-{LLVM_MAJOR}')} (tools/bootstrap does) or set "
        f"{'MLIR_BIN' if name.startswith('mlir') else 'LLVM_BIN'} to its folder",
    )


@functools.lru_cache(maxsize=None)
def _major_of(tool):
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"LLVM version (\d+)", out)
    return int(match.group(1)) if match else None


@functools.lru_cache(maxsize=None)
def tool_version(tool):
    """First line of `TOOL --version` that names a version (part of build signatures)."""
    out = cached_tool_output(tool, ("--version",))
    if out is None:
        return "unknown"
    lines = [line.strip() for line in out.splitlines() if re.search(r"[Vv]ersion|release", line)]
    return lines[0] if lines else (out.strip().splitlines()[0] if out.strip() else "unknown")


@functools.lru_cache(maxsize=None)
def cached_tool_output(tool, args):
    """What `TOOL ARGS...` prints (stdout then stderr), or None when it cannot run. Remembered on disk per tool
    file version: builds ask on every run (versions, processor lists), and starting an LLVM tool only to ask
    costs tens of ms each time."""
    try:
        stat = os.stat(tool)
    except OSError:
        return None
    key = f"{os.path.realpath(tool)}|{stat.st_mtime_ns}|{stat.st_size}|{' '.join(args)}"
    cache = os.path.join(cache_root(), "tool-output.json")
    try:
        with open(cache, encoding="utf-8") as handle:
            known = json.load(handle)
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    try:
        run = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    known[key] = run.stdout + run.stderr
    try:
        from .fsutil import write_atomic

        write_atomic(cache, json.dumps(known, sort_keys=True))
    except Exception:  # only a cache
        pass
    return known[key]


def cache_root():
    """Root of our caches: `$MLIRGPU_CACHE_DIR`, else `$XDG_CACHE_HOME/scons-mlir-gpu`, else
    `~/.cache/scons-mlir-gpu`."""
    if os.environ.get("MLIRGPU_CACHE_DIR"):
        return os.environ["MLIRGPU_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "scons-mlir-gpu")


def _nvcc_wheel_roots():
    roots = []
    for entry in sys.path:
        roots += glob.glob(os.path.join(entry, "nvidia", "cuda_nvcc"))
        roots += glob.glob(os.path.join(entry, "nvidia", "cu*"))
    return [root for root in roots if os.path.isfile(os.path.join(root, "bin", "ptxas"))]


def cuda_toolkit(explicit=None):
    """The CUDA toolkit root: `explicit` when given (as upstream's toolkit=), else the first root found that
    holds both bin/ptxas and libdevice (None when there is none)."""
    if explicit:
        return os.path.abspath(explicit)
    candidates = [os.environ.get(var) for var in ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT")]
    on_path = shutil.which("ptxas")
    if on_path:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(on_path))))
    candidates.append("/usr/local/cuda")
    candidates += _nvcc_wheel_roots()
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
        raise ToolMissing(
            f"{name} not found (no CUDA toolkit)",
            fix="install a CUDA toolkit or the PyPI wheel nvidia-cuda-nvcc, or pass --toolkit / set CUDA_PATH",
        )
    return path


def rocm_toolkit(explicit=None):
    """The ROCm root: `explicit` when given, else the first root found holding amdgcn/bitcode, or None."""
    if explicit:
        return os.path.abspath(explicit)
    candidates = [os.environ.get(var) for var in ("ROCM_PATH", "ROCM_ROOT", "ROCM_HOME")]
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
        raise ToolMissing(
            f"ROCm device library {name}.bc not found",
            fix="install the Debian package rocm-device-libs, or pass --toolkit / set ROCM_PATH to a ROCm root",
        )
    return path


def lld(rocm_root):
    """ld.lld for HSACO linking: ROCm's own when it has one (as upstream), else lld-22."""
    if rocm_root:
        own = _executable(os.path.join(rocm_root, "llvm", "bin", "ld.lld"))
        if own:
            return own
    return llvm_tool("ld.lld")


def forget():
    """Drop what was found (a worker does this when its caller's environment changed)."""
    for cached in (llvm_tool, _major_of, tool_version):
        cached.cache_clear()
