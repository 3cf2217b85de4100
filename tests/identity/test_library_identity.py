"""Device-function libraries against upstream: a library built here (`emit=library`) and linked into kernels
elsewhere gives, byte for byte, the ISA and binary `mlir-opt --gpu-module-to-binary="l=<the same bitcode>"`
makes, for NVVM, ROCDL and XeVM, at O0 and O3 (so linkage and order after the link matter, not only what
optimization leaves), from target-neutral code; and a library of LLVM dialect with its own target attribute,
linked through the kernel's `link = [...]`."""
import os

import pytest

import oracle
from corpusutil import CORPUS, instantiate
from test_upstream_identity import _pipeline
from mlirgpu import CompileError, CompileOptions, compile_file, compile_to_object

LIBRARY = """\
module attributes {gpu.container_module} {
  gpu.module @mathlib {
    func.func @softplus(%x: f32) -> f32 {
      %e = math.exp %x : f32
      %r = math.log1p %e : f32
      return %r : f32
    }
    func.func @axpy(%a: f32, %x: f32, %y: f32) -> f32 {
      %m = arith.mulf %a, %x : f32
      %r = arith.addf %m, %y : f32
      %c = call @clamp(%r) : (f32) -> f32
      return %c : f32
    }
    func.func private @clamp(%x: f32) -> f32 attributes {llvm.linkage = #llvm.linkage<internal>} {
      %top = arith.constant 8.0 : f32
      %r = arith.minimumf %x, %top : f32
      return %r : f32
    }
  }
}
"""

KERNELS = """\
module attributes {gpu.container_module} {
  gpu.module @activations {
    func.func private @softplus(f32) -> f32
    func.func private @axpy(f32, f32, f32) -> f32
    gpu.func @apply(%x: memref<256xf32>, %y: memref<256xf32>, %a: f32) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %s = func.call @softplus(%v) : (f32) -> f32
      %w = memref.load %y[%i] : memref<256xf32>
      %r = func.call @axpy(%a, %s, %w) : (f32, f32, f32) -> f32
      memref.store %r, %y[%i] : memref<256xf32>
      gpu.return
    }
  }
}
"""

CHIPS = {"nvvm": "sm_80", "rocdl": "gfx942", "xevm": "pvc"}
SUFFIX = {"nvvm": {"isa": "isa", "bin": "cubin"}, "rocdl": {"isa": "isa", "bin": "hsaco"},
          "xevm": {"isa": "isa", "bin": "spv"}}
ISA_OBJECT_TAIL = {"xevm": b"\0"}


def _same_as_upstream(kernels, options, toolkit, pipeline, libs, dumps):
    result = compile_file(kernels, options)
    stems = [job.stem for job in result.jobs]
    target = result.jobs[0].target.name
    for fmt, suffix in SUFFIX[target].items():
        upstream = oracle.upstream_objects(kernels, fmt, toolkit, pipeline, libs=libs)
        assert len(upstream) == len(stems)
        for stem, (attr, blob) in zip(stems, upstream):
            ours = (dumps / f"{stem}.{suffix}").read_bytes() + (ISA_OBJECT_TAIL.get(target, b"") if fmt == "isa"
                                                                 else b"")
            assert ours == blob, f"{stem}.{suffix} differs from upstream format={fmt} l={','.join(libs)}"


@pytest.mark.parametrize("level", (0, 3))
@pytest.mark.parametrize("target", sorted(CHIPS))
def test_target_neutral_library_links_as_upstream(target, level, tmp_path, cuda_root, rocm_root):
    toolkit = {"nvvm": cuda_root, "rocdl": rocm_root}.get(target, "")
    chip = CHIPS[target]
    (tmp_path / "mathlib.mlir").write_text(LIBRARY)
    (tmp_path / "kernels.mlir").write_text(KERNELS)
    built = dict(target=target, chip=chip, opt_level=level, toolkit=toolkit)
    result = compile_to_object(str(tmp_path / "mathlib.mlir"), str(tmp_path / "mathlib"),
                               CompileOptions(emit="library", dump_dir=str(tmp_path / "lib.dumps"), **built))
    library = tmp_path / f"mathlib.{target}.bc"
    assert library.is_file() and not result.binaries
    assert sorted(os.listdir(tmp_path / "lib.dumps")) == ["mathlib.initial.ll", "mathlib.linked.ll", "mlirgpu.json"]
    linked = (tmp_path / "lib.dumps" / "mathlib.linked.ll").read_text()
    # The source's linkage: external functions exported, the internal one kept inside.
    assert "define float @softplus(" in linked and "define internal float @clamp(" in linked
    dumps = tmp_path / "dumps"
    options = CompileOptions(format="bin", dump_dir=str(dumps), link_libs=(str(library),), **built)
    _same_as_upstream(str(tmp_path / "kernels.mlir"), options, toolkit, _pipeline(target, chip, level),
                      (str(library),), dumps)


LLVM_LIBRARY = """\
module attributes {gpu.container_module} {
  gpu.module @twice [#nvvm.target<chip = "sm_80", O = @O@>] {
    llvm.func @twice(%x: f32) -> f32 {
      %r = llvm.fadd %x, %x : f32
      llvm.return %r : f32
    }
    llvm.func internal @unused(%x: f32) -> f32 {
      llvm.return %x : f32
    }
  }
}
"""

LLVM_KERNEL = """\
module attributes {gpu.container_module} {
  gpu.module @doubling [#nvvm.target<chip = "sm_80", O = @O@, link = ["@LIB@"]>] {
    llvm.func @twice(f32) -> f32
    llvm.func @apply(%p: !llvm.ptr<1>) attributes {nvvm.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %r = llvm.call @twice(%v) : (f32) -> f32
      llvm.store %r, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""


@pytest.mark.parametrize("level", (0, 3))
def test_llvm_dialect_library_through_the_link_attribute(level, tmp_path, cuda_root):
    (tmp_path / "twice.mlir").write_text(LLVM_LIBRARY.replace("@O@", str(level)))
    compile_to_object(str(tmp_path / "twice.mlir"), str(tmp_path / "twice.bc"),
                      CompileOptions(emit="library", toolkit=cuda_root))
    library = tmp_path / "twice.nvvm.bc"  # `-o twice.bc` names the prefix, as `-o twice` does
    kernel = tmp_path / "doubling.mlir"
    kernel.write_text(LLVM_KERNEL.replace("@O@", str(level)).replace("@LIB@", str(library)))
    dumps = tmp_path / "dumps"
    _same_as_upstream(str(kernel), CompileOptions(format="bin", dump_dir=str(dumps), toolkit=cuda_root),
                      cuda_root, None, (), dumps)
    assert "unused" not in (dumps / "doubling.linked.ll").read_text()  # only what the kernel needs is linked


@pytest.mark.parametrize("level", (0, 3))
def test_a_textual_ll_library_links_as_upstream(level, tmp_path, cuda_root):
    """Upstream reads `l=` files with parseIRFile, which takes textual IR too: so does -l (it was refused)."""
    library = os.path.join(CORPUS, "data", "user2_nvptx.ll")
    source = instantiate(os.path.join(CORPUS, "link_user.nvvm.mlir"), tmp_path / "k.mlir", "sm_90", level)
    dumps = tmp_path / "dumps"
    _same_as_upstream(source, CompileOptions(format="bin", dump_dir=str(dumps), toolkit=cuda_root,
                                             link_libs=(library,)), cuda_root, None, (library,), dumps)


@pytest.mark.parametrize("target", sorted(CHIPS))
def test_an_isa_keeps_a_call_no_library_defines_as_upstream(target, tmp_path, cuda_root, rocm_root):
    """format=isa leaves a function no library defines to a device linker, as upstream does (the same ISA);
    the binary formats refuse it at the link stage, naming the function."""
    toolkit = {"nvvm": cuda_root, "rocdl": rocm_root}.get(target, "")
    (tmp_path / "kernels.mlir").write_text(KERNELS)
    built = dict(target=target, chip=CHIPS[target], opt_level=3, toolkit=toolkit)
    dumps = tmp_path / "dumps"
    result = compile_file(str(tmp_path / "kernels.mlir"), CompileOptions(format="isa", dump_dir=str(dumps), **built))
    upstream = oracle.upstream_objects(str(tmp_path / "kernels.mlir"), "isa", toolkit,
                                       _pipeline(target, CHIPS[target], 3))
    assert [(dumps / f"{job.stem}.isa").read_bytes() + ISA_OBJECT_TAIL.get(target, b"") for job in result.jobs] == \
        [blob for _attr, blob in upstream]
    with pytest.raises(CompileError, match="calls @axpy, which no linked library defines"):
        compile_file(str(tmp_path / "kernels.mlir"), CompileOptions(format="bin", **built))
