"""The host IR patch (mlirgpu.pipeline.hostplaceholder) on real mlir-translate 22 output, recorded in
tests/data/host_placeholder: `placeholder.ll` is the translation of `placeholder.mlir` (two gpu.binary ops, a
`bin` object and an `assembly` one with an O level, holding markers) as the device modules' run makes it
(`--split-input-file --preserve-ll-uselistorder ...`); `binaries.ll` is upstream's plain `mlir-translate
--mlir-to-llvmir` of the same file holding `every_byte.bin` (bytes 0x00-0xff, `"`, `\\`, NULs) and
`assembly.isa` (PTX text with quotes and a backslash) instead. The patch gives `binaries.ll` byte for byte, and
gives up (None) on any form it does not know."""
import os
from types import SimpleNamespace

import pytest

from corpusutil import ROOT
from mlirgpu.pipeline.hostplaceholder import Placeholder, llvm_escaped, patched

DATA = os.path.join(ROOT, "tests", "data", "host_placeholder")
PREFIX = "mlirgpu.placeholder.0123456789abcdef."


def _read(name, mode="r"):
    with open(os.path.join(DATA, name), mode) as handle:
        return handle.read()


JOBS = (SimpleNamespace(module=SimpleNamespace(name="k")), SimpleNamespace(module=SimpleNamespace(name="j")))
BYTES = {"k": _read("every_byte.bin", "rb"), "j": _read("assembly.isa", "rb")}
HELD = Placeholder(_read("placeholder.mlir"), PREFIX, JOBS)


def _data_of(job):
    return BYTES[job.module.name]


def test_the_patched_placeholder_translation_is_the_translation_with_the_binaries():
    assert patched(_read("placeholder.ll"), HELD, _data_of, 2) == _read("binaries.ll")


def test_bytes_are_escaped_as_llvms_printer_writes_them():
    assert llvm_escaped(b'a"\\\x00\x7f\x1f ~\xff') == 'a\\22\\\\\\00\\7F\\1F ~\\FF'
    assert f'c"{llvm_escaped(BYTES["k"])}"' in _read("binaries.ll")


@pytest.mark.parametrize("change", [
    # the binary's global used by an instruction the patch does not know
    lambda text: text.replace("define void @main() {\n", "define void @main() {\n  %p = load i8, ptr @k_binary\n"),
    # a load call with another size than the global's
    lambda text: text.replace("@mgpuModuleLoad(ptr @k_binary, i64 43)", "@mgpuModuleLoad(ptr @k_binary, i64 44)"),
    # a marker more than expected (another global holding one)
    lambda text: text.replace("\n@k_module", f'\n@copy = internal constant [43 x i8] c"{PREFIX}000000", align 8'
                                             "\n@k_module", 1),
    # a marker in a form the patch does not know (another alignment)
    lambda text: text.replace('000000", align 8', '000000", align 16'),
    # a use-list directive outside a block of them
    lambda text: text.replace("  ret void\n}", "  ret void\n  uselistorder ptr @k_module, { 1, 0 }\n}", 1),
], ids=["other-use", "other-size", "marker-twice", "other-form", "stray-directive"])
def test_a_form_the_patch_does_not_know_gives_none(change):
    text = _read("placeholder.ll")
    assert change(text) != text, "the change did not apply"
    assert patched(change(text), HELD, _data_of, 2) is None


def test_fewer_binaries_than_gpu_binary_ops_give_none():
    assert patched(_read("placeholder.ll"), HELD, _data_of, 3) is None


def test_bytes_llvm_prints_as_zeroinitializer_give_none():
    assert patched(_read("placeholder.ll"), HELD, lambda job: b"\0\0" if job is JOBS[0] else BYTES["j"], 2) is None
