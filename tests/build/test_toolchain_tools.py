"""Tool discovery with the real tools: a ROCm library missing from a real compile names its package, the tools'
identities and facts (asked of mlir-opt and mlir-translate) are computed once per user and kept."""
import os

import pytest

from corpusutil import CORPUS, instantiate
from mlirgpu import CompileOptions, compile_file
from mlirgpu.llvm import toolchain
from mlirgpu.errors import CompileError


def test_rocm_library_missing_names_the_package(tmp_path):
    source = instantiate(os.path.join(CORPUS, "math_ocml.rocdl.mlir"), tmp_path / "m.mlir", "gfx942", 3)
    with pytest.raises(CompileError) as error:
        compile_file(source, CompileOptions(format="isa", toolkit=str(tmp_path / "empty-rocm")))
    text = str(error.value)
    assert "ocml.bc not found" in text and "rocm-device-libs" in text and text.startswith(f"{source}:")


def test_identities_side_by_side_equal_one_by_one(tmp_path, monkeypatch):
    """identities() (threads, the first time) gives each tool's identity() and llvmlite's, computed anew in a
    fresh facts folder and then known without computing."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tools = [toolchain.llvm_tool("mlir-opt"), toolchain.llvm_tool("mlir-translate")]
    toolchain._tool_memory.clear()
    assert not toolchain.identities_known(tools, llvmlite=True)
    together = toolchain.identities(tools, llvmlite=True)
    assert toolchain.identities_known(tools, llvmlite=True)
    toolchain._tool_memory.clear()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))
    assert together == {**{tool: toolchain.identity(tool) for tool in tools}, "llvmlite": toolchain.llvmlite_identity()}
    assert all("[" in identity and "missing" not in identity for identity in together.values())


def test_tool_facts_are_the_users_whatever_the_cache_folder(tmp_path, monkeypatch):
    """Facts describe this machine's files, so a build with another MLIRGPU_CACHE_DIR (a second checkout with a
    cache of its own) hashes no tool again; where the user's cache folder cannot be made they go to the cache
    folder."""
    tools = [toolchain.llvm_tool("mlir-translate")]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    monkeypatch.setenv("MLIRGPU_CACHE_DIR", str(tmp_path / "one"))
    toolchain._tool_memory.clear()
    assert not toolchain.identities_known(tools, llvmlite=True)
    toolchain.identities(tools, llvmlite=True)
    assert (tmp_path / "user" / "scons-mlir-gpu" / "tools.json").is_file() and not (tmp_path / "one").exists()
    toolchain._tool_memory.clear()
    monkeypatch.setenv("MLIRGPU_CACHE_DIR", str(tmp_path / "two"))
    assert toolchain.identities_known(tools, llvmlite=True)
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "not-a-folder" / "cache"))
    toolchain._tool_memory.clear()
    assert not toolchain.identities_known(tools, llvmlite=True)
    toolchain.identities(tools, llvmlite=True)
    assert (tmp_path / "two" / "tools.json").is_file()


def test_a_lowering_pipeline_is_expanded_once_per_user_not_per_process(tmp_path, monkeypatch):
    """mlir-opt's expansion of a `--lowering` pipeline is a fact of the mlir-opt file: a process that has not
    expanded it (a build tool's, a worker's) reads it from the user's tool facts, with no mlir-opt run, and gets
    the same pipeline; a pipeline mlir-opt cannot read is never kept, and fails the same way each time."""
    from mlirgpu.errors import CompileError
    from mlirgpu.llvm import process
    from mlirgpu.pipeline import lowering

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    runs = []
    real_run = process.run
    monkeypatch.setattr(process, "run", lambda argv, what, **kw: runs.append(what) or real_run(argv, what, **kw))
    flags = '-gpu-lower-to-nvvm-pipeline="cubin-chip=sm_80 cubin-format=isa"'

    def fresh_process():
        lowering._expanded.cache_clear()
        lowering._expand.cache_clear()
        toolchain._tool_memory.clear()
        toolchain._read_from.clear()

    fresh_process()
    first = lowering.expand(flags)
    assert runs == ["listing the passes mlir-opt registers", "expanding the lowering pipeline"]  # both facts
    assert first.binary["format"] == "isa" and first.before
    fresh_process()
    assert lowering.expand(flags) == first and len(runs) == 2
    for _attempt in range(2):
        fresh_process()
        with pytest.raises(CompileError, match="mlir-opt cannot read the lowering pipeline"):
            lowering.expand("gpu-lower-to-nvvm-pipeline{opt-level=x}")
    assert len(runs) == 6  # each failure: the run and the run for its message
