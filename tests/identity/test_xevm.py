"""XeVM beyond the identity corpus: what upstream's serializer does to a module shared with another target, code
generation isolated per module (LLVM 22's SPIR-V back end keeps state between modules), failures of the SPIR-V
back end reported with a fix, the attribute's own checks, and the binaries valid SPIR-V (spirv-val)."""
import os
import re
import subprocess
from dataclasses import replace

import pytest

import oracle
from corpusutil import CORPUS, instantiate
from mlirgpu import CompileError, CompileOptions, compile_file
from mlirgpu.llvm import toolchain

pytestmark = pytest.mark.needs("spirv-val", "tools/bootstrap installs it (Debian package spirv-tools)")

KERNEL = """\
module attributes {{gpu.container_module}} {{
  gpu.module @{name} [{targets}] {{
    llvm.func spir_kernelcc @k(%p: !llvm.ptr<1>) attributes {{gpu.kernel{extra}}} {{
{body}
      llvm.return
    }}
  }}
}}
"""
LOAD_STORE = """\
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.fmul %v, %v : f32
      llvm.store %w, %p : f32, !llvm.ptr<1>"""


def _write(tmp_path, text, name="k.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_later_nvvm_target_sees_the_sub_group_size_as_upstream(tmp_path, cuda_root):
    """Upstream's XeVM serializer sets the sub-group size on the gpu.module itself, so the NVVM target listed
    after it on the same module translates a kernel carrying it: both jobs' optimized IR equal upstream's."""
    source = _write(tmp_path, KERNEL.format(name="shared", targets='#xevm.target<chip = "pvc", O = 3>, '
                                            '#nvvm.target<chip = "sm_80", O = 3>', extra=", nvvm.kernel",
                                            body=LOAD_STORE))
    dumps = tmp_path / "dumps"
    result = compile_file(source, CompileOptions(format="bin", dump_dir=str(dumps), toolkit=cuda_root))
    stems = [job.stem for job in result.jobs]
    upstream = oracle.upstream_objects(source, "llvm", cuda_root)
    assert len(upstream) == 2
    for stem, (attr, bitcode) in zip(stems, upstream):
        theirs = oracle.strip_module_id(oracle.disassemble(bitcode, tmp_path, stem))
        ours = oracle.strip_module_id(oracle.normalised_ir(str(dumps / f"{stem}.opt.ll"), tmp_path))
        assert ours == theirs, attr
        assert re.search(r"!intel_reqd_sub_group_size ![0-9]+", ours), attr
    nvvm_first = _write(tmp_path, KERNEL.format(name="nvvm_first", targets='#nvvm.target<chip = "sm_80", O = 3>, '
                                                '#xevm.target<chip = "pvc", O = 3>', extra=", nvvm.kernel",
                                                body=LOAD_STORE), "first.mlir")
    compile_file(nvvm_first, CompileOptions(format="bin", dump_dir=str(tmp_path / "d2"), toolkit=cuda_root))
    nvvm_ir = next((tmp_path / "d2").glob("*sm_80*.initial.ll"), None) or next((tmp_path / "d2").glob("*.initial.ll"))
    assert "intel_reqd_sub_group_size" not in nvvm_ir.read_text()  # not yet set when NVVM translates it


def test_each_module_compiles_as_if_alone(tmp_path):
    """Eight copies of a module with loops in one file (one worker): every SPIR-V binary equals the one the
    module gives compiled alone, and passes spirv-val. Without isolated code generation, LLVM 22's SPIR-V
    back end reuses label ids of the previous module (llvm/llvm-project#160613)."""
    loops = instantiate(os.path.join(CORPUS, "loops.xevm.mlir"), tmp_path / "one.mlir", "pvc", 0)
    text = open(loops, encoding="utf-8").read()
    module = text[text.index("  gpu.module") : text.rindex("}")]
    copies = "".join(module.replace("@loops_xevm", f"@loops_{i}") for i in range(8))
    many = _write(tmp_path, "module attributes {gpu.container_module} {\n" + copies + "}\n", "many.mlir")
    compile_file(loops, CompileOptions(format="bin", dump_dir=str(tmp_path / "alone")))
    alone = (tmp_path / "alone" / "loops_xevm.spv").read_bytes()
    compile_file(many, CompileOptions(format="bin", dump_dir=str(tmp_path / "many")))
    for i in range(8):
        path = tmp_path / "many" / f"loops_{i}.spv"
        assert path.read_bytes() == alone, path.name
        checked = subprocess.run(["spirv-val", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_spirv_back_end_failure_names_the_module_and_the_fix(tmp_path):
    """A dynamic alloca needs a SPIR-V extension MLIR 22 does not enable: LLVM aborts (upstream too); we report
    it at the module with the message and a fix, and the worker lives on for the next compile."""
    body = """\
      %n = llvm.mlir.constant(4 : i64) : i64
      %m = llvm.ptrtoint %p : !llvm.ptr<1> to i64
      %size = llvm.add %n, %m : i64
      %a = llvm.alloca %size x f32 : (i64) -> !llvm.ptr
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      llvm.store %v, %a : f32, !llvm.ptr"""
    source = _write(tmp_path, KERNEL.format(name="vla", targets='#xevm.target<O = 0>', extra="", body=body))
    with pytest.raises(CompileError) as failure:
        compile_file(source, CompileOptions(format="bin"))
    text = str(failure.value)
    assert f"{source}:2: error: module @vla" in text
    assert "SPV_INTEL_variable_length_array" in text and "fix: MLIR 22's XeVM serializer enables no" in text
    upstream = subprocess.run([toolchain.llvm_tool("mlir-opt"), source, "--gpu-module-to-binary"],
                              capture_output=True, text=True)
    assert upstream.returncode != 0 and "SPV_INTEL_variable_length_array" in upstream.stderr
    fine = _write(tmp_path, KERNEL.format(name="fine", targets="#xevm.target", extra="", body=LOAD_STORE), "ok.mlir")
    assert compile_file(fine, CompileOptions(format="bin")).binaries


@pytest.mark.parametrize("attribute,expected", [
    ('#xevm.target<triple = "nvptx64-nvidia-cuda">', "unsupported XeVM target triple 'nvptx64-nvidia-cuda'"),
    ('#xevm.target<linkFiles = ["a.bc", 3]>', "parameter 'linkFiles' of #xevm.target must hold strings"),
    ('#xevm.target<O = 5>', "O"),
    ('#xevm.target<linkFiles = ["missing_library.bc"]>', "missing_library.bc"),
])
def test_attribute_problems_are_reported_at_the_module(tmp_path, attribute, expected):
    source = _write(tmp_path, KERNEL.format(name="bad", targets=attribute, extra="", body=LOAD_STORE))
    with pytest.raises(CompileError) as failure:
        compile_file(source, CompileOptions(format="bin"))
    assert f"{source}:2: error:" in str(failure.value) and expected in str(failure.value)


def test_vendor_layout_is_refused_for_spirv(tmp_path):
    source = _write(tmp_path, KERNEL.format(name="plain", targets="#xevm.target", extra="", body=LOAD_STORE))
    with pytest.raises(CompileError) as failure:
        compile_file(source, CompileOptions(format="fatbin", layout="vendor"))
    assert "target xevm has no vendor layout" in str(failure.value) and "--layout plain" in str(failure.value)


def test_any_chip_name_is_taken_as_upstream_does(tmp_path):
    """22.1.8 gives the chip to no tool: the SPIR-V is the same for every chip name."""
    made = []
    for chip in ("pvc", "bmg", "lnl"):
        source = _write(tmp_path, KERNEL.format(name="k", targets=f'#xevm.target<chip = "{chip}">', extra="",
                                                body=LOAD_STORE), f"{chip}.mlir")
        made.append(compile_file(source, CompileOptions(format="bin")).binaries[0].data)
    assert made[0] == made[1] == made[2] and made[0][:4] == bytes.fromhex("03022307")


LEFTOVER_LAYOUTS = """\
#lanes = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>
module attributes {{gpu.container_module}} {{
  gpu.module @tile [#xevm.target<O = 3>] {{
    llvm.func spir_kernelcc @tile_exp(%p: !llvm.ptr<1>) attributes {{gpu.kernel}} {{
      %v = llvm.load %p : !llvm.ptr<1> -> vector<8xf32>
      %e = llvm.intr.exp(%v){exp_layouts} : (vector<8xf32>) -> vector<8xf32>
      %s = llvm.fadd %e, %v{add_layouts} : vector<8xf32>
      llvm.store %s, %p : vector<8xf32>, !llvm.ptr<1>
      llvm.return
    }}
  }}
}}
"""


def _spirv_valid(path):
    checked = subprocess.run(["spirv-val", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _matches_upstream(source, dumps, stems):
    """Our isa and bin objects of every module equal upstream's (each module serialized first, see oracle), and
    the binaries pass spirv-val."""
    for fmt, suffix, tail in (("isa", "isa", b"\0"), ("bin", "spv", b"")):
        upstream = oracle.upstream_objects_each_alone(source, fmt, "")
        assert len(upstream) == len(stems)
        for stem, (attr, blob) in zip(stems, upstream):
            assert (dumps / f"{stem}.{suffix}").read_bytes() + tail == blob, f"{stem}.{suffix} ({attr})"
    for stem in stems:
        _spirv_valid(dumps / f"{stem}.spv")


def test_layouts_upstreams_lowering_leaves_on_llvm_ops_change_nothing(tmp_path):
    """gpu-lower-to-xevm-pipeline leaves `#xegpu.layout` attributes on the llvm.intr.* and arith-turned-llvm ops
    it makes; upstream's serializer ignores them. mlir-translate does not load XeGPU: the module translates all
    the same, to the objects upstream makes and to those of the module without the attributes."""
    layouts = {"exp_layouts": " {layout_operand_0 = #lanes, layout_result_0 = #lanes}",
               "add_layouts": " {layout_result_0 = #xegpu.layout<inst_data = [8, 16]>}"}
    source = _write(tmp_path, LEFTOVER_LAYOUTS.format(**layouts))
    result = compile_file(source, CompileOptions(format="bin", dump_dir=str(tmp_path / "d")))
    _matches_upstream(source, tmp_path / "d", [job.stem for job in result.jobs])
    plain = _write(tmp_path, LEFTOVER_LAYOUTS.format(exp_layouts="", add_layouts=""), "plain.mlir")
    compile_file(plain, CompileOptions(format="bin", dump_dir=str(tmp_path / "p")))
    assert (tmp_path / "p" / "tile.spv").read_bytes() == (tmp_path / "d" / "tile.spv").read_bytes()


def test_an_attribute_of_a_dialect_nobody_knows_is_refused_as_mlir_opt_refuses(tmp_path):
    """mlir-translate takes attributes of dialects it does not load as opaque; one of a dialect mlir-opt does
    not know either is still refused at its line, as upstream refuses it (the file is read by mlir-opt first)."""
    source = _write(tmp_path, LEFTOVER_LAYOUTS.format(exp_layouts=" {layout = #frob.layout<[1, 16]>}",
                                                      add_layouts=""))
    upstream = subprocess.run([toolchain.llvm_tool("mlir-opt"), source, "--gpu-module-to-binary"],
                              capture_output=True, text=True)
    assert upstream.returncode != 0 and "unregistered dialect" in upstream.stderr
    with pytest.raises(CompileError) as failure:
        compile_file(source, CompileOptions(format="bin"))
    assert f"{source}:6:" in str(failure.value) and "unregistered dialect" in str(failure.value)


DECLARED = """\
module attributes {gpu.container_module} {
  gpu.module @only_declared [#xevm.target] {
    llvm.func spir_kernelcc @elsewhere(!llvm.ptr<1>) attributes {gpu.kernel}
  }
  gpu.module @declared_first [#xevm.target<O = 3>] {
    llvm.func spir_kernelcc @later(!llvm.ptr<1>, f32) attributes {gpu.kernel}
    llvm.func spir_kernelcc @scale(%p: !llvm.ptr<1>, %f: f32) attributes {gpu.kernel} {
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.fmul %v, %f : f32
      llvm.store %w, %p : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""


def test_kernels_declared_without_a_body_compile_as_upstream(tmp_path):
    """Upstream's serializer sets the sub-group size on the first kernel, also one declared without a body:
    the metadata goes after `declare` (LLVM's parser refuses it after the line), and the objects of a module
    holding only a declaration, or a declaration before a kernel, equal upstream's."""
    source = _write(tmp_path, DECLARED)
    result = compile_file(source, CompileOptions(format="bin", dump_dir=str(tmp_path / "d")))
    stems = [job.stem for job in result.jobs]
    assert stems == ["only_declared", "declared_first"]
    assert re.search(r"^declare !intel_reqd_sub_group_size ![0-9]+ spir_kernel void @later\(",
                     (tmp_path / "d" / "declared_first.initial.ll").read_text(), re.M)
    _matches_upstream(source, tmp_path / "d", stems)


def test_an_error_inside_a_split_module_names_the_files_line(tmp_path):
    """mlir-translate reads the gpu.modules one split after another and names lines inside its split (here 5,
    in the second module); the error names the op's line in the file."""
    lines = KERNEL.format(name="fine", targets="#xevm.target", extra="", body=LOAD_STORE).splitlines()
    bad = KERNEL.format(name="bad", targets="#xevm.target", extra="",
                        body=LOAD_STORE.replace("llvm.fmul %v, %v : f32", "math.exp %v : f32")).splitlines()
    source = _write(tmp_path, "\n".join(lines[:-1] + bad[1:-1] + lines[-1:]) + "\n")
    line = open(source, encoding="utf-8").read().splitlines().index("      %w = math.exp %v : f32") + 1
    assert line == 13
    with pytest.raises(CompileError) as failure:
        compile_file(source, CompileOptions(format="bin"))
    assert str(failure.value).startswith(f"{source}:{line}: error:") and "math.exp" in str(failure.value)


def _upstream_xevm_binary(source, flags):
    """The one SPIR-V binary of `mlir-opt source flags` (upstream's pipeline with its serialization)."""
    lowered = subprocess.run([toolchain.llvm_tool("mlir-opt"), source, *flags], capture_output=True, text=True)
    assert lowered.returncode == 0, lowered.stderr
    found = re.findall(r'#gpu\.object<#xevm\.target, "((?:[^"\\]|\\.)*)"', lowered.stdout)
    assert len(found) == 1, lowered.stdout[:400]
    return oracle.decode(found[0])


def test_kernels_on_memrefs_lower_as_upstreams_xevm_pipeline_lowers_them(tmp_path):
    """22.1.8's gpu-lower-to-xevm-pipeline takes kernels with memref arguments, and the built-in lowering for
    `--target xevm` gives the same SPIR-V (what the README says)."""
    source = os.path.join(CORPUS, "pipelines", "xevm_add.mlir")
    compile_file(source, CompileOptions(target="xevm", format="bin", host_code="ignore", dump_dir=str(tmp_path)))
    ours = (tmp_path / "kernels.spv").read_bytes()
    assert ours == _upstream_xevm_binary(source, ["--gpu-lower-to-xevm-pipeline=xegpu-op-level=lane"])
    _spirv_valid(tmp_path / "kernels.spv")


ATTRIBUTION = """\
module @reverse attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @reverse(%a: memref<16xf32>) workgroup(%tile: memref<16xf32, 3>) kernel {
      %i = gpu.thread_id x
      %c15 = arith.constant 15 : index
      %x = memref.load %a[%i] : memref<16xf32>
      memref.store %x, %tile[%i] : memref<16xf32, 3>
      gpu.barrier
      %j = arith.subi %c15, %i : index
      %y = memref.load %tile[%j] : memref<16xf32, 3>
      memref.store %y, %a[%i] : memref<16xf32>
      gpu.return
    }
  }
  func.func @run(%a: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @kernels::@reverse blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%a : memref<16xf32>)
    return
  }
}
"""


@pytest.mark.parametrize("lowering", ["built-in", "upstream"])
def test_a_workgroup_attribution_becomes_a_parameter_no_launch_passes_and_is_warned_of(tmp_path, lowering):
    """MLIR 22 lowers a workgroup memory attribution for XeVM into one more `ptr addrspace(3)` kernel parameter
    (upstream's pipeline too: same SPIR-V), which the launch, passing only the memref, never fills: the compile
    says so in one warning naming the kernel, also when the compile comes from the cache."""
    source = _write(tmp_path, ATTRIBUTION)
    flags = ["--gpu-lower-to-xevm-pipeline=xegpu-op-level=lane"]
    options = (CompileOptions(target="xevm", format="bin", host_code="ignore") if lowering == "built-in" else
               CompileOptions(lowering=flags[0], format="bin"))
    for run in ("first", "again"):
        result = compile_file(source, replace(options, dump_dir=str(tmp_path / run)))
        said = [str(warning) for warning in result.warnings if "no launch passes" in str(warning)]
        assert said == [f"{source}:2: warning: kernel @reverse of gpu.module @kernels takes its workgroup memory as "
                        "an extra ptr addrspace(3) parameter that no launch passes (MLIR 22's xevm lowering, as "
                        "upstream's): use an llvm.mlir.global in addrspace 3"], run
        assert ("cached" in result.timings) == (run == "again")
    assert re.search(r"define spir_kernel void @reverse\([^\n]*, ptr addrspace\(3\) [^,\n]*\)",
                     (tmp_path / "first" / "kernels.opt.ll").read_text())
    assert (tmp_path / "first" / "kernels.spv").read_bytes() == _upstream_xevm_binary(source, flags)
    plain = compile_file(os.path.join(CORPUS, "pipelines", "xevm_add.mlir"), options)
    assert not [warning for warning in plain.warnings if "no launch passes" in str(warning)]


PASTED = sorted(name for name in os.listdir(os.path.join(CORPUS, "pipelines")) if name.startswith("xevm_"))


@pytest.mark.parametrize("name", PASTED)
def test_the_xevm_pipeline_corpus_gives_valid_spirv(tmp_path, name):
    """The XeGPU/XeVM files compiled with their RUN line's pipeline (compared with upstream byte for byte in
    test_pasted_pipelines) give SPIR-V that spirv-val accepts, leftover layouts and declared kernels included."""
    path = os.path.join(CORPUS, "pipelines", name)
    with open(path, encoding="utf-8") as handle:
        flags = re.match(r"// RUN: mlir-opt %s (.*?)\s*\\?\n", handle.read()).group(1)
    result = compile_file(path, CompileOptions(lowering=flags, format="bin", dump_dir=str(tmp_path)))
    assert result.jobs
    for job in result.jobs:
        _spirv_valid(tmp_path / f"{job.stem}.spv")
