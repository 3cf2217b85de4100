"""Tool discovery: what is found where, and the one-line hints when something is missing."""
import pytest

from mlirgpu.llvm import toolchain
from mlirgpu.targets.cuda import cuda_toolkit
from mlirgpu.errors import ToolMissing


@pytest.fixture
def no_llvm(monkeypatch, tmp_path):
    monkeypatch.setattr(toolchain, "DEBIAN_LLVM_BIN", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MLIR_BIN", raising=False)
    monkeypatch.delenv("LLVM_BIN", raising=False)
    toolchain.forget()
    yield
    toolchain.forget()


@pytest.mark.parametrize("tool,package", [("mlir-opt", "mlir-22-tools"), ("ld.lld", "lld-22"),
                                          ("llvm-mc", "llvm-22")])
def test_missing_llvm_tool_names_its_package(no_llvm, tool, package):
    with pytest.raises(ToolMissing) as error:
        toolchain.llvm_tool(tool)
    assert package in str(error.value) and "\n" not in str(error.value)


def test_mlir_bin_overrides(monkeypatch, tmp_path):
    fake = tmp_path / "mlir-opt"
    fake.write_text("#!/bin/sh\necho 'LLVM version 22.1.0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("MLIR_BIN", str(tmp_path))
    toolchain.forget()
    try:
        assert toolchain.llvm_tool("mlir-opt") == str(fake)
    finally:
        toolchain.forget()


def test_cuda_root_needs_ptxas_and_libdevice(monkeypatch, tmp_path):
    half = tmp_path / "half"
    (half / "bin").mkdir(parents=True)
    (half / "bin" / "ptxas").write_text("")
    monkeypatch.setenv("CUDA_PATH", str(half))
    found = cuda_toolkit()
    assert found != str(half)


def test_a_fact_asked_by_threads_at_once_is_computed_once(tmp_path, monkeypatch):
    """Facts about tools (a hash, a `--version`) asked by several threads at once, as the SCons tool's identities
    are: computed by one thread while the others wait for it, then read from memory and from the facts file."""
    import threading
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    probe = tmp_path / "tool"
    probe.write_bytes(b"tool bytes")
    calls = []

    def compute():
        calls.append(threading.get_ident())
        time.sleep(0.2)
        return f"fact {len(calls)}"

    results = []
    threads = [threading.Thread(target=lambda: results.append(toolchain.file_fact(str(probe), "probe", compute)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == ["fact 1"] * 4 and len(calls) == 1
    assert "fact 1" in (tmp_path / "cache" / "scons-mlir-gpu" / "tools.json").read_bytes().decode("utf-8", "replace")


