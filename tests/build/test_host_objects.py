"""Host objects people can use: several chips per module, vendor sections that standard tools read, MLIR host
code with its launch glue, C headers and the registry."""
import glob
import os
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

import oracle
from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu import CompileOptions, compile_to_object
from mlirgpu.llvm import toolchain
from mlirgpu.targets.bundle import read_bundle
from sconsutil import scons

DATA = os.path.join(ROOT, "tests", "data")


def cuobjdump():
    found = glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages", "nvidia", "cu*", "bin",
                                   "cuobjdump"))
    assert found, "cuobjdump missing: the PyPI wheel nvidia-cuda-cuobjdump is installed by tools/bootstrap"
    return found[0]


def listing(path):
    run = subprocess.run([cuobjdump(), "-lelf", "-lptx", str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def link(tmp_path, objects, main="int main(void) { return 0; }\n", name="prog", extra=()):
    source = tmp_path / f"{name}.c"
    source.write_text(main)
    program = tmp_path / name
    subprocess.run(["gcc", f"-I{tmp_path}", str(source), *map(str, objects), *extra, "-o", str(program)], check=True)
    return program


def test_nvvm_chips_in_one_fatbin_seen_by_cuobjdump(tmp_path, cuda_root):
    obj = tmp_path / "v.o"
    result = compile_to_object(os.path.join(CORPUS, "vecadd.neutral.mlir"), str(obj), CompileOptions(
        target="nvvm", chip="sm_80,sm_90", layout="vendor", toolkit=cuda_root, dump_dir=str(tmp_path / "D")))
    assert [b.format for b in result.binaries] == ["fatbin"] and result.binaries[0].chips == ("sm_80", "sm_90")
    for path in (obj, link(tmp_path, [obj])):
        text = listing(path)
        assert "sm_80.cubin" in text and "sm_90.cubin" in text
        assert "sm_90.ptx" in text and "sm_80.ptx" not in text  # PTX for the newest chip, as nvcc does
    # The per-chip dumps stay; the fatbin's cubins are those dumps.
    extract = tmp_path / "x"
    extract.mkdir()
    subprocess.run([cuobjdump(), "-xelf", "all", str(obj)], cwd=extract, check=True, capture_output=True)
    extracted = sorted(p.read_bytes() for p in extract.iterdir())
    dumped = sorted((tmp_path / "D" / f"vecadd_neutral.{c}.cubin").read_bytes() for c in ("sm_80", "sm_90"))
    assert extracted == dumped
    with open(obj, "rb") as handle:
        elf = ELFFile(handle)
        segment = elf.get_section_by_name(".nvFatBinSegment").data()
        assert int.from_bytes(segment[:4], "little") == 0x466243B1 and int.from_bytes(segment[4:8], "little") == 1
        assert elf.get_section_by_name(".nv_fatbin").data()[:4] == (0xBA55ED50).to_bytes(4, "little")


def test_rocdl_chips_in_one_bundle_extracted_by_llvm_objdump(tmp_path):
    obj = tmp_path / "v.o"
    result = compile_to_object(os.path.join(CORPUS, "vecadd.neutral.mlir"), str(obj), CompileOptions(
        target="rocdl", chip="gfx90a,gfx942", layout="vendor", dump_dir=str(tmp_path / "D")))
    assert [b.format for b in result.binaries] == ["bundle"]
    program = link(tmp_path, [obj])
    for path in (obj, program):
        out = tmp_path / ("out-" + path.name)
        out.mkdir()
        run = subprocess.run([toolchain.llvm_tool("llvm-objdump"), "--offloading", str(path)], cwd=out,
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        for chip in ("gfx90a", "gfx942"):
            extracted = out.parent / f"{path.name}.0.hipv4-amdgcn-amd-amdhsa--{chip}"
            assert extracted.read_bytes() == (tmp_path / "D" / f"vecadd_neutral.{chip}.hsaco").read_bytes()
            extracted.unlink()
    with open(obj, "rb") as handle:
        elf = ELFFile(handle)
        fatbin = elf.get_section_by_name(".hip_fatbin")
        assert fatbin["sh_addralign"] == 4096
        entries = dict(read_bundle(fatbin.data()))
        assert sorted(entries) == ["hipv4-amdgcn-amd-amdhsa--gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx942",
                                   "host-x86_64-unknown-linux-gnu-"]
        segment = elf.get_section_by_name(".hipFatBinSegment").data()
        assert int.from_bytes(segment[:4], "little") == 0x48495046


def test_section_override_in_vendor_layout_warns(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "mlirgpu", "compile", os.path.join(CORPUS, "vecadd.neutral.mlir"), "-o",
         str(tmp_path / "v.o"), "--target", "nvvm", "--chip", "sm_90", "--layout", "vendor", "--section", "mine"],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons")))
    assert run.returncode == 0, run.stderr
    assert "warning" in run.stderr and "cuobjdump" in run.stderr
    with open(tmp_path / "v.o", "rb") as handle:
        assert ELFFile(handle).get_section_by_name("mine") is not None


TWO_OBJECTS_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "one.h"
#include "two.h"
int main(void) {
  int seen = 0;
  if (one_saxpy_nvvm_binary_size == 0 || two_saxpy_nvvm_binary_size == 0) return 1;
  if (one_saxpy_nvvm_binary == two_saxpy_nvvm_binary) return 2;
  if (strcmp(ONE_SAXPY_NVVM_CHIPS, "sm_80") || strcmp(TWO_SAXPY_NVVM_CHIPS, "sm_90")) return 3;
  MLIRGPU_FOREACH_BINARY(b) {
    printf("%s %s %s %s %s %s %llu\n", b->source, b->module, b->target, b->chips, b->format, b->section,
           (unsigned long long)b->size);
    if (b->data == one_saxpy_nvvm_binary && b->size == one_saxpy_nvvm_binary_size) seen |= 1;
    if (b->data == two_saxpy_nvvm_binary && b->size == two_saxpy_nvvm_binary_size) seen |= 2;
  }
  return seen == 3 ? 0 : 4;
}
"""


def test_two_objects_same_module_name_header_and_registry(tmp_path, cuda_root):
    objects = []
    for prefix, chip in (("one", "sm_80"), ("two", "sm_90")):
        src = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / f"{prefix}.mlir", chip, 3)
        obj = tmp_path / f"{prefix}.o"
        compile_to_object(src, str(obj), CompileOptions(format="bin", toolkit=cuda_root, symbol_prefix=f"{prefix}_",
                                                        header=str(tmp_path / f"{prefix}.h")))
        objects.append(obj)
    header = (tmp_path / "one.h").read_text()
    assert "gpu.module @saxpy_nvvm: nvvm sm_80, format bin, section .rodata" in header
    program = link(tmp_path, objects, TWO_OBJECTS_MAIN)
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    lines = sorted(run.stdout.splitlines())
    assert lines[0].startswith("one.mlir saxpy_nvvm nvvm sm_80 bin .rodata")
    assert lines[1].startswith("two.mlir saxpy_nvvm nvvm sm_90 bin .rodata")
    # Without a prefix the two objects' symbols collide, which the linker reports.
    for prefix in ("one", "two"):
        compile_to_object(str(tmp_path / f"{prefix}.mlir"), str(tmp_path / f"{prefix}-plain.o"),
                          CompileOptions(format="bin", toolkit=cuda_root))
    clash = subprocess.run(["gcc", str(tmp_path / "one-plain.o"), str(tmp_path / "two-plain.o"), "-o",
                            str(tmp_path / "clash"), "-x", "c", "-"], input="int main(void){return 0;}",
                           capture_output=True, text=True)
    assert clash.returncode != 0 and "multiple definition of `saxpy_nvvm_binary'" in clash.stderr


HOST_CASES = [
    # (corpus file, target, chip, format); the neutral file is lowered and outlined first
    ("host_pipeline.nvvm.mlir", "nvvm", "sm_80", "fatbin"),
    ("host_pipeline.rocdl.mlir", "rocdl", "gfx942", "bin"),
    ("launch_host.neutral.mlir", "nvvm", "sm_90", "isa"),
]

HOST_MAIN = {
    "host_pipeline.nvvm.mlir": ("void host_pipeline_nvvm(float*, float*, long, long, long, float);",
                                "host_pipeline_nvvm(data, data, 0, 1024, 1, 2.0f);"),
    "host_pipeline.rocdl.mlir": ("void host_pipeline_rocdl(float*, float*, long, long, long, float);",
                                 "host_pipeline_rocdl(data, data, 0, 1024, 1, 2.0f);"),
    "launch_host.neutral.mlir": (
        "void launch_host_softmax_num(float*, float*, long, long, long, float*, float*, long, long, long, float);",
        "launch_host_softmax_num(data, data, 0, 4096, 1, out, out, 0, 4096, 1, 0.5f);"),
}


@pytest.mark.parametrize("name,target,chip,fmt", HOST_CASES)
def test_host_code_keeps_upstream_launch_glue(name, target, chip, fmt, tmp_path, cuda_root, rocm_root):
    toolkit = cuda_root if target == "nvvm" else rocm_root
    neutral = name.endswith(".neutral.mlir")
    src = instantiate(os.path.join(CORPUS, name), tmp_path / name, chip, 3)
    obj = tmp_path / "host.o"
    options = CompileOptions(format=fmt, toolkit=toolkit, dump_dir=str(tmp_path / "D"),
                             target=target if neutral else "", chip=chip if neutral else "")
    result = compile_to_object(src, str(obj), options)

    # Upstream: the same lowering, gpu-module-to-binary, then mlir-translate.
    staged = src
    if neutral:
        device = (f"builtin.module(gpu-kernel-outlining, nvvm-attach-target{{chip={chip} O=2}}, lower-affine, "
                  "convert-scf-to-cf, gpu.module(convert-gpu-to-nvvm, canonicalize, cse, reconcile-unrealized-casts))")
        staged = str(tmp_path / "device.mlir")
        (tmp_path / "device.mlir").write_text(oracle.run_mlir_opt([src, f"--pass-pipeline={device}"]))
    host = ("builtin.module(convert-math-to-llvm, finalize-memref-to-llvm, convert-arith-to-llvm, "
            "convert-cf-to-llvm, convert-func-to-llvm, gpu-to-llvm, reconcile-unrealized-casts)")
    (tmp_path / "host.mlir").write_text(oracle.run_mlir_opt([staged, f"--pass-pipeline={host}"]))
    lowered = oracle.run_mlir_opt([str(tmp_path / "host.mlir"), f"--gpu-module-to-binary=format={fmt} toolkit={toolkit}"])
    translated = subprocess.run([toolchain.llvm_tool("mlir-translate"), "--mlir-to-llvmir"], input=lowered,
                                capture_output=True, text=True, check=True).stdout
    assert (tmp_path / "D" / "host.ll").read_text() == translated

    # Its sections are those llc makes of that host code (constructors in .init_array.123, as llc and clang
    # place them), besides our registry.
    (tmp_path / "host.ll").write_text(translated)
    subprocess.run([toolchain.llvm_tool("llc"), "-filetype=obj", "-relocation-model=pic", str(tmp_path / "host.ll"),
                    "-o", str(tmp_path / "llc.o")], check=True)
    ours = {name: kind for name, kind in _sections(obj).items() if "mlirgpu_registry" not in name}
    assert ours == _sections(tmp_path / "llc.o")

    # The object links with a stub runtime, by GNU ld and by ld.lld; its constructors load exactly our binaries,
    # the host code launches.
    pre, call = HOST_MAIN[name]
    main = ("#include <stdlib.h>\n" + pre + "\nint main(void) { float *data = calloc(4096, sizeof(float));"
            " float *out = calloc(4096, sizeof(float)); " + call + " return 0; }\n")
    lld = ["-fuse-ld=lld", "-B" + os.path.dirname(os.path.realpath(toolchain.llvm_tool("ld.lld")))]
    for linker, extra in (("ld", []), ("lld", lld)):
        program = link(tmp_path, [obj, os.path.join(DATA, "mgpu_stub.c")], main, name=f"prog-{linker}", extra=extra)
        stub = tmp_path / f"stub-{linker}"
        stub.mkdir()
        run = subprocess.run([str(program)], env=dict(os.environ, STUB_DIR=str(stub)), capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stderr
        calls = (stub / "calls.txt").read_text().splitlines()
        loaded = [line for line in calls if line.startswith(("load ", "loadjit "))]
        assert len(loaded) == len(result.binaries) >= 1, (linker, calls)
        for index, binary in enumerate(result.binaries):
            data = (stub / f"load.{index}.bin").read_bytes()
            dump = tmp_path / "D" / f"{binary.module}.{ {'fatbin': 'fatbin', 'bin': 'hsaco', 'isa': 'isa'}[fmt] }"
            assert data == dump.read_bytes(), binary.module
            assert loaded[index].startswith("loadjit" if fmt == "isa" else "load ")
        assert sum(line.startswith("launch ") for line in calls) == 2
        assert sum(line.startswith("unload ") for line in calls) == len(result.binaries), (linker, calls)


def _sections(path):
    """{name: (type, flags)} of an object's sections."""
    with open(path, "rb") as handle:
        return {section.name: (section["sh_type"], section["sh_flags"]) for section in ELFFile(handle).iter_sections()}


SCONS_PROJECT = """\
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}], CPPPATH=["."])
env.Replace(GPU_TARGET="nvvm", GPU_CHIP=["sm_80", "sm_90"], GPU_LAYOUT="vendor")
v = env.GpuObject("v", "v.mlir")
r = env.GpuObject("r", "r.mlir", GPU_TARGET="rocdl", GPU_CHIP=["gfx90a", "gfx942"])
h = env.GpuObject("h", "h.mlir", GPU_LAYOUT="plain")
env.Program("app", ["main.c", "mgpu_stub.c", v, r, h])
"""

SCONS_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "v.h"
#include "r.h"
#include "h.h"
void host_pipeline_nvvm(float*, float*, long, long, long, float);
int main(void) {
  int count = 0;
  MLIRGPU_FOREACH_BINARY(b) {
    printf("%s %s %s %s %s\n", b->module, b->target, b->chips, b->format, b->section);
    count++;
  }
  float *data = calloc(1024, sizeof(float));
  host_pipeline_nvvm(data, data, 0, 1024, 1, 2.0f);
  return count == 4 && vecadd_neutral_binary_size > 0 ? 0 : 1;
}
"""


def test_scons_builds_fat_vendor_and_host_objects(tmp_path):
    from sconsutil import TOOLPATH, compiled

    project = tmp_path / "p"
    project.mkdir()
    (project / "SConstruct").write_text(SCONS_PROJECT.format(toolpath=TOOLPATH))
    (project / "v.mlir").write_text(open(os.path.join(CORPUS, "vecadd.neutral.mlir")).read())
    (project / "r.mlir").write_text(open(os.path.join(CORPUS, "vecadd.neutral.mlir")).read()
                                    .replace("@vecadd_neutral", "@vecadd_amd"))
    instantiate(os.path.join(CORPUS, "host_pipeline.nvvm.mlir"), project / "h.mlir", "sm_80", 3)
    (project / "main.c").write_text(SCONS_MAIN)
    (project / "mgpu_stub.c").write_text(open(os.path.join(DATA, "mgpu_stub.c")).read())
    first = scons(project, "DUMP=1")
    assert compiled(first) == ["h.mlir", "r.mlir", "v.mlir"]
    assert (project / "v.dumps" / "vecadd_neutral.fatbin").exists()
    assert (project / "r.dumps" / "vecadd_amd.hipfb").exists()
    assert (project / "h.dumps" / "host.ll").exists()
    assert "up to date" in scons(project, "DUMP=1").stdout
    run = subprocess.run([str(project / "app")], capture_output=True, text=True,
                         env=dict(os.environ, STUB_DIR=str(project)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "vecadd_neutral nvvm sm_80,sm_90 fatbin .nv_fatbin" in run.stdout
    assert "vecadd_amd rocdl gfx90a,gfx942 bundle .hip_fatbin" in run.stdout
    text = listing(project / "app")
    assert "sm_80.cubin" in text and "sm_90.cubin" in text and "sm_90.ptx" in text
    (project / "r.dumps" / "vecadd_amd.hipfb").unlink()
    assert compiled(scons(project, "DUMP=1")) == ["r.mlir"]
