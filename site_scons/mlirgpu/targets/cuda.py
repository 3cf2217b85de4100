"""The CUDA toolkit the NVVM target uses: ptxas, fatbinary and libdevice.

Found, first hit wins: the `toolkit` option, `$CUDA_PATH`, `$CUDA_HOME`, `$CUDA_ROOT`, the folder above `ptxas` on
PATH, `/usr/local/cuda`, then the PyPI wheels `nvidia-cuda-nvcc` + `nvidia-nvvm` (installed as
`nvidia/cu13/{bin,nvvm}`). A root counts only if it has ptxas and libdevice.
"""
import glob
import os
import re
import sys

from ..errors import ToolMissing
from ..compile_options import hint
from ..llvm.toolchain import executable, finder, search_also, search_environment, tool_output, which

INSTALL = ("pip install nvidia-cuda-nvcc nvidia-nvvm, or install a CUDA toolkit and set CUDA_PATH (or "
           f"{hint('toolkit')})")
search_also("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT")


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


@finder
def _cuda_toolkit(environment):
    env = dict(environment)
    candidates = [env[var] for var in ("CUDA_PATH", "CUDA_HOME", "CUDA_ROOT")]
    on_path = which("ptxas", environment)
    if on_path:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(on_path))))
    candidates.append("/usr/local/cuda")
    candidates += nvcc_wheel_roots()
    for root in candidates:
        if root and os.path.isfile(os.path.join(root, "bin", "ptxas")) and libdevice(root):
            return os.path.abspath(root)
    return None


LIBDEVICE = os.path.join("nvvm", "libdevice", "libdevice.10.bc")


def libdevice(toolkit):
    """Path of libdevice.10.bc in a CUDA toolkit, or None."""
    if not toolkit:
        return None
    path = os.path.join(toolkit, LIBDEVICE)
    return path if os.path.isfile(path) else None


def cuda_tool(name, toolkit):
    """ptxas or fatbinary from the toolkit; when missing, an error saying what is missing and what to install."""
    path = executable(os.path.join(toolkit, "bin", name)) if toolkit else None
    if not path:
        where = f"in the CUDA toolkit {toolkit}" if toolkit else \
            f"(no CUDA toolkit: one needs bin/ptxas and {LIBDEVICE})"
        raise ToolMissing(f"{name} not found {where}", fix=INSTALL)
    return path


def ptxas_chips(ptxas):
    """The real chips (`sm_*`) this ptxas accepts, oldest first (from `ptxas --help`)."""
    text = tool_output(ptxas, ("--help",)) or ""
    chips = set(re.findall(r"'(sm_\d+[a-z]?)'", text))
    return sorted(chips, key=lambda chip: (int(re.sub(r"\D", "", chip)), chip))
