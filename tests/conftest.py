"""Shared fixtures: the toolchain locations the tests pass to both upstream and our compiler."""
import atexit
import os
import shutil
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mlirgpu.llvm import toolchain  # noqa: E402
from needs import check_marks, have, missing  # noqa: E402, F401 - have and missing: for the test files
from mlirgpu.targets.cuda import cuda_toolkit
from mlirgpu.targets.rocm import rocm_toolkit

CORPUS = os.path.join(ROOT, "tests", "corpus")

# Caches of the tests' own, empty at the start (never the user's), shared by the tests of one process with the
# stage cache on, as users run: builds compared with clean ones compare a warm cache with a cold one.
os.environ["MLIRGPU_CACHE_DIR"] = tempfile.mkdtemp(prefix="mlirgpu-test-cache-")
atexit.register(shutil.rmtree, os.environ["MLIRGPU_CACHE_DIR"], True)
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="mlirgpu-test-user-cache-")  # the tool facts (toolchain)
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)
# Commands run in their own process unless a test starts a compile server (tests/test_service.py), so what a
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


_DATA = []


def corpus_data():
    """tests/corpus/data/*.ll as bitcode (llvm-as) in a folder of this test process: the @DATA@ of the corpus."""
    if not _DATA:
        import subprocess
        import tempfile

        folder = tempfile.mkdtemp(prefix="mlirgpu-corpus-data-")
        for source in sorted(os.listdir(os.path.join(CORPUS, "data"))):
            target = os.path.join(folder, os.path.splitext(source)[0] + ".bc")
            subprocess.run([toolchain.llvm_tool("llvm-as"), os.path.join(CORPUS, "data", source), "-o", target],
                           check=True)
        _DATA.append(folder)
    return _DATA[0]


def instantiate(src, dst, chip="", opt_level=""):
    """Copy a corpus file with its @CHIP@ / @O@ / @DATA@ placeholders filled in."""
    with open(src, encoding="utf-8") as handle:
        text = handle.read()
    if "@DATA@" in text:
        text = text.replace("@DATA@", corpus_data())
    with open(dst, "w", encoding="utf-8") as handle:
        handle.write(text.replace("@CHIP@", chip).replace("@O@", str(opt_level)))
    return str(dst)


def neutral_targets(path, default=("nvvm", "rocdl", "xevm")):
    """The targets a target-neutral corpus file is lowered for: its `// identity-targets:` line, else all."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("//"):
                break
            if line.startswith("// identity-targets:"):
                return tuple(line.split(":", 1)[1].split())
    return default


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


TIERS = {
    "unit": ("test_architecture", "test_bootstrap", "test_docs_reference", "test_header_c", "test_scan",
             "test_toolchain", "test_compiler_log", "test_trace", "test_fuzz", "test_records", "test_tiers",
             "test_link_plan", "test_server_protocol"),
    "build": ("test_scons", "test_repository", "test_meson", "test_cmake", "test_wheel", "test_drop_in",
              "test_host_objects", "test_elf_objects", "test_artifacts", "test_cli", "test_substitute", "test_repro",
              "test_truthful_refusals", "test_bench_smoke", "test_library_builds", "test_lowering_safety",
              "test_environment", "test_checked_options"),
    "identity": ("test_upstream_identity", "test_xevm", "test_scan_differential", "test_pasted_pipelines",
                 "test_library_identity", "test_many_modules", "test_spool", "test_llvm_backend"),
    "robustness": ("test_hostile_input", "test_cli_hostile", "test_reliability", "test_stress", "test_trust",
                   "test_missing_tools", "test_llvm_ownership"),
    "service": ("test_service", "test_server_trust", "test_server_limits", "test_server_requests", "test_launcher",
                "test_forkserver", "test_workers"),
    "fleet": ("test_remote_cache", "test_distributed", "test_stage_cache"),
    "gpu": ("test_gpu_run",),
}
_TIER_OF = {module: tier for tier, modules in TIERS.items() for module in modules}


def pytest_collection_modifyitems(config, items):
    """Each test file belongs to one tier (a marker); a file in none is an error, so the tiers stay whole."""
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module not in _TIER_OF:
            raise pytest.UsageError(f"{module}.py is in no tier: add it to TIERS in tests/conftest.py")
        item.add_marker(getattr(pytest.mark, _TIER_OF[module]))
