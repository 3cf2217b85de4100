"""Shared fixtures (the toolchain locations the tests pass to both upstream and our compiler), the tests' own
caches, and the tiers: one folder each (tests/tier_rules.py)."""
import atexit
import os
import shutil
import sys
import tempfile

import pytest

pytest_plugins = ("pytester",)  # tests/unit/test_tiers.py runs suites of its own in this process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS)  # the shared helpers, for the test files of every tier folder

from mlirgpu.llvm import toolchain  # noqa: E402
from needs import check_marks, missing  # noqa: E402
import tier_rules  # noqa: E402
from mlirgpu.targets.cuda import cuda_toolkit  # noqa: E402
from mlirgpu.targets.rocm import rocm_toolkit  # noqa: E402

# Caches of the tests' own, empty at the start (never the user's), shared by the tests of one process with the
# stage cache on, as users run: builds compared with clean ones compare a warm cache with a cold one.
os.environ["MLIRGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="mlirgpu-test-cache-")
atexit.register(shutil.rmtree, os.environ["MLIRGPU_CACHE_DIR"], True)
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="mlirgpu-test-user-cache-")  # the tool facts (toolchain)
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)
# Commands run in their own process unless a test starts a compile server (tests/service/test_service.py), so what a
# test sees never depends on whether an earlier test left a server running.
os.environ["MLIRGPU_SERVER"] = "off"


def pytest_runtest_setup(item):
    check_marks(item)  # tools a test needs (tests/needs.py)


@pytest.fixture(scope="session")
def cuda_root():
    root = cuda_toolkit()
    if not root:
        missing("a CUDA toolkit", "tools/bootstrap installs one (pip install 'scons-mlir-gpu[cuda]')")
    return root


@pytest.fixture(scope="session")
def rocm_root(tmp_path_factory):
    """A ROCm-shaped root for upstream mlir-opt, which wants <root>/amdgcn/bitcode and <root>/llvm/bin/ld.lld."""
    libs = rocm_toolkit()
    if not libs:
        missing("the ROCm device libraries", "tools/bootstrap installs them (Debian package rocm-device-libs)")
    root = tmp_path_factory.mktemp("rocm")
    os.symlink(os.path.join(libs, "amdgcn"), root / "amdgcn")
    (root / "llvm" / "bin").mkdir(parents=True)
    os.symlink(toolchain.llvm_tool("ld.lld"), root / "llvm" / "bin" / "ld.lld")
    return str(root)


@pytest.fixture(params=["in-process", "served"])
def served(request):
    """Environment variables for a command run in its own process, or through a compile server of this test's
    own (started by the command, stopped after the test): fault and hostile-input tests run both ways, since a
    served compile crosses a socket, a runner and the server's workers that an in-process one never meets."""
    if request.param == "in-process":
        yield {}
        return
    folder = tempfile.mkdtemp(prefix="mlirgpu-srv-")  # short: the socket's path must fit AF_UNIX's 108 bytes
    extra = {"MLIRGPU_SERVER": "on", "MLIRGPU_SERVER_DIR": folder, "MLIRGPU_SERVER_IDLE": "60"}
    yield extra
    import subprocess

    subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], capture_output=True, timeout=60,
                   env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), **extra))
    shutil.rmtree(folder, ignore_errors=True)


def pytest_collect_file(file_path, parent):
    tier_rules.refuse_misplaced(str(file_path), TESTS)  # before the file is imported


def pytest_collection_modifyitems(config, items):
    tier_rules.mark(items, TESTS)
