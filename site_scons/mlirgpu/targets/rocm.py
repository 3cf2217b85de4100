"""The ROCm toolkit the ROCDL target uses: device libraries (`amdgcn/bitcode/*.bc`) and ROCm's own ld.lld.

Found, first hit wins: the `toolkit` option, `$ROCM_PATH`, `$ROCM_ROOT`, `$ROCM_HOME`, `/opt/rocm`, then Debian's
`rocm-device-libs` location `/usr/lib/<multiarch>`. HSACO links use `<rocm>/llvm/bin/ld.lld` when there is one,
as upstream, else lld-22.
"""
import glob
import os

from ..errors import ToolMissing
from ..compile_options import hint
from ..llvm.toolchain import executable, finder, llvm_tool, search_also, search_environment

INSTALL = f"apt install rocm-device-libs, or set ROCM_PATH (or {hint('toolkit')}) to a ROCm root"
search_also("ROCM_PATH", "ROCM_ROOT", "ROCM_HOME")


def rocm_toolkit(explicit=None, environment=None):
    """The ROCm root: `explicit` when given, else the first root found holding amdgcn/bitcode, or None."""
    if explicit:
        return os.path.abspath(explicit)
    return _rocm_toolkit(environment if environment is not None else search_environment())


@finder
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
        where = f"in {os.path.dirname(path)}" if path else "(no ROCm toolkit with amdgcn/bitcode was found)"
        raise ToolMissing(f"ROCm device library {name}.bc not found {where}", fix=INSTALL)
    return path


def lld(rocm_root, environment=None):
    """ld.lld for HSACO linking: ROCm's own when it has one (as upstream), else lld-22."""
    if rocm_root:
        own = executable(os.path.join(rocm_root, "llvm", "bin", "ld.lld"))
        if own:
            return own
    return llvm_tool("ld.lld", environment)
