"""How a `--lowering` pipeline's text reads (mlirgpu.pipeline.passtext), with mlir-opt's registered passes
stood in by a table of this test's own: elements split at depth 0 only, options and quoted values, op anchors
nested, and the allow-list's refusals, each saying why (a pass mlir-opt does not register, a plugin, a flag that
writes a file, an mlir-opt option, a pass that writes a file wherever it is named). The real mlir-opt's table:
tests/build/test_lowering_safety.py."""
import pytest

from mlirgpu.errors import CompileError
from mlirgpu.pipeline import passtext

REGISTERED = {"canonicalize": ("max-iterations",), "cse": (), "convert-gpu-to-nvvm": ("index-bitwidth",),
              "gpu-to-llvm": (), "snapshot-op-locations": ("filename",), "test-lower-to-nvvm": ("cubin-chip",)}


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setattr(passtext, "registered", lambda: REGISTERED)


def test_a_pipeline_splits_at_depth_zero_only():
    assert passtext.split("a, b{x=1,y=2} ,gpu.module(c,d)", ",") == ["a", "b{x=1,y=2}", "gpu.module(c,d)"]
    assert passtext.split('p{s="a,b"},q', ",") == ['p{s="a,b"}', "q"]  # a quoted comma is not a separator
    assert passtext.split(",,a,", ",") == ["a"]
    assert passtext.split('k=1  s="x y"\tz', " \t\n") == ["k=1", 's="x y"', "z"]


def test_an_element_reads_as_its_name_and_options():
    assert passtext.element("convert-gpu-to-nvvm{index-bitwidth=32 use-bare-ptr-memref-call-conv=1}") == (
        "convert-gpu-to-nvvm", {"index-bitwidth": "32", "use-bare-ptr-memref-call-conv": "1"})
    assert passtext.element("p{opts=\"-O3 -v\" flag}") == ("p", {"opts": "-O3 -v", "flag": ""})
    assert passtext.element("cse") == ("cse", {})
    assert passtext.element("gpu.module(cse)") == ("gpu.module", {})


def test_the_passes_given_include_those_in_op_anchors():
    text = "gpu.module(convert-gpu-to-nvvm{index-bitwidth=32},any(cse)),gpu-to-llvm"
    assert list(passtext.given(text)) == [("convert-gpu-to-nvvm", {"index-bitwidth": "32"}), ("cse", {}),
                                          ("gpu-to-llvm", {})]


def test_registered_passes_in_anchors_are_taken():
    passtext.check_pipeline("canonicalize{max-iterations=3},gpu.module(convert-gpu-to-nvvm,any(cse)),gpu-to-llvm")
    passtext.check_flag("-test-lower-to-nvvm=cubin-chip=sm_90", "test-lower-to-nvvm", "cubin-chip=sm_90")
    passtext.check_flag("--pass-pipeline=builtin.module(cse)", "pass-pipeline", "builtin.module(cse)")


@pytest.mark.parametrize("check,why", [
    (lambda: passtext.check_pipeline("canonicalise"), "is not a pass or pipeline mlir-opt registers (did you mean "
                                                      "canonicalize?)"),
    (lambda: passtext.check_pipeline("gpu.module(cse,no-such-pass)"), "'no-such-pass' in the lowering pipeline is "
                                                                      "not a pass or pipeline"),
    (lambda: passtext.check_pipeline("cse)("), "is not a pass, a pipeline or an op anchor"),
    (lambda: passtext.check_flag("--load-pass-plugin=x.so", "load-pass-plugin", "x.so"), "loads code into mlir-opt"),
    (lambda: passtext.check_flag("-o=out.mlir", "o", "out.mlir"), "writes a file the build does not declare"),
    (lambda: passtext.check_flag("--log-actions-to=f", "log-actions-to", "f"), "writes a file the build does not"),
    (lambda: passtext.check_flag("--mlir-print-ir-after-all", "mlir-print-ir-after-all", None),
     "is an mlir-opt option, not a pass"),
    (lambda: passtext.check_flag("--split-input-file", "split-input-file", None), "is an mlir-opt option"),
    (lambda: passtext.check_pipeline("snapshot-op-locations{filename=x}"), "writes the IR to its filename= file"),
    (lambda: passtext.check_pipeline("canonicalize{max-iterations=snapshot-op-locations}"), "writes the IR"),
    (lambda: passtext.check_flag("-cse", "cse", "snapshot-op-locations"), "writes the IR"),
])
def test_anything_else_is_refused_saying_why(check, why):
    with pytest.raises(CompileError) as refused:
        check()
    assert why in str(refused.value)
    assert refused.value.fix.startswith("give only passes and pass pipelines")
