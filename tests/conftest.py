"""Shared fixtures: the toolchain locations the tests pass to both upstream and our compiler."""
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mlirgpu import toolchain  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "corpus")


@pytest.fixture(scope="session")
def cuda_root():
    root = toolchain.cuda_toolkit()
    if not root:
        pytest.fail("no CUDA toolkit: run tools/bootstrap (it installs the nvidia-cuda-nvcc wheel)")
    return root


@pytest.fixture(scope="session")
def rocm_root(tmp_path_factory):
    """A ROCm-shaped root for upstream mlir-opt, which wants <root>/amdgcn/bitcode and <root>/llvm/bin/ld.lld."""
    libs = toolchain.rocm_toolkit()
    if not libs:
        pytest.fail("no ROCm device libraries: run tools/bootstrap (Debian package rocm-device-libs)")
    root = tmp_path_factory.mktemp("rocm")
    os.symlink(os.path.join(libs, "amdgcn"), root / "amdgcn")
    (root / "llvm" / "bin").mkdir(parents=True)
    os.symlink(toolchain.llvm_tool("ld.lld"), root / "llvm" / "bin" / "ld.lld")
    return str(root)


def instantiate(src, dst, chip="", opt_level=""):
    """Copy a corpus file with its @CHIP@ / @O@ placeholders filled in."""
    with open(src, encoding="utf-8") as handle:
        text = handle.read()
    with open(dst, "w", encoding="utf-8") as handle:
        handle.write(text.replace("@CHIP@", chip).replace("@O@", str(opt_level)))
    return str(dst)


def have(program):
    return shutil.which(program) is not None
