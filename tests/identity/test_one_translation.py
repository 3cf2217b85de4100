"""Host code translated in the device modules' mlir-translate run, with placeholder binaries, then patched
(mlirgpu.pipeline.hostplaceholder): the host LLVM IR (the `host.ll` dump) and the host object are byte for byte
those of a second translation with the binaries (the way before, and the fallback), over the RUN-line corpus
and the main corpus's host-code files; the patch engages on every one of them (one mlir-translate run)."""
import dataclasses
import os

import pytest

from corpusutil import CORPUS, instantiate
from mlirgpu import CompileError, CompileOptions
from mlirgpu.execution import fanout
from mlirgpu.llvm import process
from mlirgpu.llvm.ops import object_from_ir
from mlirgpu.pipeline import driver, embed, hostobject, hostplaceholder
from mlirgpu.pipeline.planning import check_options
from runlines import run_line

PIPELINES = os.path.join(CORPUS, "pipelines")
RUN_LINE_CASES = sorted(name for name in os.listdir(PIPELINES) if name.endswith(".mlir"))
HOST_CASES = [("host_pipeline.nvvm.mlir", "", "sm_80", fmt) for fmt in ("isa", "bin", "fatbin")] + [
    ("host_pipeline.rocdl.mlir", "", "gfx90a", fmt) for fmt in ("isa", "bin")] + [
    ("launch_host.neutral.mlir", target, chip, fmt)
    for target, chip, fmt in (("nvvm", "sm_80", "fatbin"), ("nvvm", "sm_80", "isa"), ("rocdl", "gfx90a", "bin"),
                              ("xevm", "bmg", "bin"))]


@pytest.fixture
def both_ways(monkeypatch):
    """Every host translation of the compiles that follow, made both ways: [(patched, translated again, the
    mlir-translate runs of the compile before the second)]; the compile goes on with the patched one."""
    made = []
    real = hostobject.translate_host

    def translate_host(source, jobs, outputs, options, placeholder=None, translated=None):
        assert translated is not None, "the host code was not translated in the device modules' run"
        data_of = lambda job: hostobject.object_bytes(job, outputs[job.id], options.format)  # noqa: E731
        patched = hostplaceholder.patched(translated, placeholder, data_of, len(source.modules))
        assert patched is not None, "the patch did not engage"
        runs = [entry[0] for tool, entry in process.tool_stats.get().items() if "mlir-translate" in tool]
        made.append((patched, real(source, jobs, outputs, options), runs))
        return patched

    monkeypatch.setattr(hostobject, "translate_host", translate_host)
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    return made


def _compile(source, options, tmp_path):
    dumps = tmp_path / "d"
    result = driver.compile_source(source, check_options(source, dataclasses.replace(options, dump_dir=str(dumps))),
                                   runner=fanout.FORKED)  # the SPIR-V back end runs isolated
    return result, (dumps / "host.ll").read_text()


def _assert_same(made, result, host_dump, source):
    [(patched, again, runs)] = made
    assert runs == [1], "the device modules and the host code are not translated in one run"
    assert patched == again
    assert host_dump == again
    name = os.path.basename(source)
    assert object_from_ir(embed.host_ir_with_glue(patched, result.binaries, name)) == \
        object_from_ir(embed.host_ir_with_glue(again, result.binaries, name))


@pytest.mark.parametrize("name", RUN_LINE_CASES)
def test_a_run_line_files_host_code_patched_is_its_second_translation(name, both_ways, tmp_path):
    source = os.path.join(PIPELINES, name)
    result, host_dump = _compile(source, CompileOptions(lowering=run_line(source)), tmp_path)
    _assert_same(both_ways, result, host_dump, source)


@pytest.mark.parametrize("name, target, chip, fmt", HOST_CASES)
def test_a_corpus_files_host_code_patched_is_its_second_translation(name, target, chip, fmt, both_ways, tmp_path,
                                                                     cuda_root, rocm_root):
    source = instantiate(os.path.join(CORPUS, name), tmp_path / name, chip, 2)
    toolkit = {"nvvm": cuda_root, "rocdl": rocm_root}.get(target or name.split(".")[1], "")
    options = CompileOptions(format=fmt, toolkit=toolkit, target=target, chip=chip if target else "")
    result, host_dump = _compile(source, options, tmp_path)
    _assert_same(both_ways, result, host_dump, source)


def test_host_ir_the_patch_does_not_know_is_translated_again(tmp_path, monkeypatch):
    """The host code's LLVM IR from the device modules' run in a form the patch does not know (here the
    binary's global loaded by an instruction): the compile translates the host code again with the binaries,
    so its host IR is what it is without the change, and the trace counts the second run."""
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    source = os.path.join(PIPELINES, "all_reduce_add.mlir")
    options = CompileOptions(lowering=run_line(source))
    patched, patched_dump = _compile(source, options, tmp_path / "patched")
    real = driver.translate_with_host
    changed = []

    def unknown_form(*args):
        *rest, host_ir = real(*args)
        changed.append(host_ir.replace("define void @main() {\n",
                                       "define void @main() {\n  %unknown = load i8, ptr @main_kernel_binary\n"))
        return (*rest, changed[-1])

    monkeypatch.setattr(driver, "translate_with_host", unknown_form)
    again, again_dump = _compile(source, options, tmp_path / "again")
    assert changed and "%unknown" in changed[0]
    assert again_dump == patched_dump and "%unknown" not in again_dump
    assert _translations(patched) == [1] and _translations(again) == [2], (patched.tools, again.tools)


def _translations(result):
    return [entry[0] for tool, entry in result.tools.items() if "mlir-translate" in tool]


def test_a_module_that_does_not_translate_is_reported_at_its_line_as_before(tmp_path, monkeypatch):
    """A gpu.module of a file with host code that mlir-translate refuses: the joint run fails, the modules are
    translated alone as without host code, and the error names the file's line of the op, as it did when the
    host code had a run of its own."""
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    source = instantiate(os.path.join(CORPUS, "host_pipeline.nvvm.mlir"), tmp_path / "bad.mlir", "sm_80", 2)
    text = open(source, encoding="utf-8").read()
    call = '      llvm.call_intrinsic "llvm.mlirgpu.unknown"() : () -> ()\n'
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(text.replace("      %r = llvm.fmul %v, %a : f32\n", "      %r = llvm.fmul %v, %a : f32\n" + call))
    line = open(source, encoding="utf-8").read().splitlines().index(call.rstrip("\n")) + 1
    options = check_options(source, CompileOptions(format="bin"))
    messages = []
    for joint in (True, False):
        if not joint:
            monkeypatch.setattr(hostplaceholder, "placeholder", lambda *args: None)
        with pytest.raises(CompileError) as failure:
            driver.compile_source(source, options)
        messages.append(str(failure.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith(f"{source}:{line}: error: could not find LLVM intrinsic"), messages[0]
