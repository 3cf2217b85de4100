"""The `mlirgpu compile` command: the seed scenario, host objects read back by C, and bad input."""
import os
import subprocess
import sys
import textwrap

import pytest
from elftools.elf.elffile import ELFFile

from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu.targets.cuda import libdevice, nvcc_wheel_roots

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))

SEED = """\
module attributes {{gpu.container_module}} {{
  gpu.module @kernel_module [{target}] {{
    llvm.func @kernel(%arg0: f32, %arg1: !llvm.ptr<1>) attributes {{gpu.kernel, {kind}.kernel}} {{
      llvm.store %arg0, %arg1 : f32, !llvm.ptr<1>
      llvm.return
    }}
  }}
}}
"""
TARGETS = {
    "nvvm": '#nvvm.target<chip = "sm_90">',
    "rocdl": '#rocdl.target<chip = "gfx942">',
}


def mlirgpu(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd)


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.mark.parametrize("kind", ["nvvm", "rocdl"])
def test_seed_scenario_leaves_every_stage(kind, tmp_path):
    source = write(tmp_path / "k.mlir", SEED.format(target=TARGETS[kind], kind=kind))
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), "--format", "isa",
                  "--dump-intermediates", str(tmp_path / "D"))
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(tmp_path / "D")) == sorted(
        [f"kernel_module.{s}" for s in ("initial.ll", "linked.ll", "opt.ll", "isa")] + ["mlirgpu.json", "repro.sh"])
    isa = (tmp_path / "D" / "kernel_module.isa").read_text()
    assert (".target sm_90" in isa) if kind == "nvvm" else (".amdgcn_target" in isa and "gfx942" in isa)
    initial = (tmp_path / "D" / "kernel_module.initial.ll").read_text()
    triple = "nvptx64-nvidia-cuda" if kind == "nvvm" else "amdgcn-amd-amdhsa"
    assert f'target triple = "{triple}"' in initial


C_READER = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
extern const unsigned char __start_gpu_binaries[], __stop_gpu_binaries[];
extern const unsigned char saxpy_nvvm_binary[], saxpy_rocdl_binary[];
extern const uint64_t saxpy_nvvm_binary_size, saxpy_rocdl_binary_size;

static int dump(const char *path, const unsigned char *data, uint64_t size) {
  if (data < __start_gpu_binaries || data + size > __stop_gpu_binaries) return 1; /* not in the section */
  if ((uintptr_t)data % 8) return 2;
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) return 3;
  return fclose(f);
}

int main(int argc, char **argv) {
  if (argc != 3) return 9;
  int rc = dump(argv[1], saxpy_nvvm_binary, saxpy_nvvm_binary_size);
  if (!rc) rc = dump(argv[2], saxpy_rocdl_binary, saxpy_rocdl_binary_size);
  printf("section bytes %ld\n", (long)(__stop_gpu_binaries - __start_gpu_binaries));
  return rc;
}
"""


def test_c_program_reads_binaries_back_from_chosen_section(tmp_path, cuda_root, rocm_root):
    nv = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "nv.mlir", "sm_80", 3)
    amd = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "amd.mlir", "gfx90a", 3)
    objects = []
    for src, toolkit, fmt in ((nv, cuda_root, "fatbin"), (amd, rocm_root, "bin")):
        obj = src + ".o"
        run = mlirgpu("compile", src, "-o", obj, "--format", fmt, "--section", "gpu_binaries",
                      "--toolkit", toolkit, "--dump-intermediates", str(tmp_path / "D"))
        assert run.returncode == 0, run.stderr
        objects.append(obj)
        with open(obj, "rb") as handle:
            elf = ELFFile(handle)
            assert elf["e_machine"] == "EM_X86_64" and elf["e_type"] == "ET_REL"
            section = elf.get_section_by_name("gpu_binaries")
            assert section is not None and section["sh_addralign"] == 8
            assert not section["sh_flags"] & 0x1  # SHF_WRITE: read-only
            symbols = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols()}
            binary = [s for n, s in symbols.items() if n.endswith("_binary")][0]
            assert binary["st_info"]["bind"] == "STB_GLOBAL"
            assert elf.get_section(binary["st_shndx"]).name == "gpu_binaries"
    reader = tmp_path / "reader.c"
    reader.write_text(C_READER)
    program = tmp_path / "reader"
    subprocess.run(["gcc", str(reader), *objects, "-o", str(program)], check=True)
    run = subprocess.run([str(program), str(tmp_path / "nv.bin"), str(tmp_path / "amd.bin")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout
    assert (tmp_path / "nv.bin").read_bytes() == (tmp_path / "D" / "saxpy_nvvm.fatbin").read_bytes()
    assert (tmp_path / "amd.bin").read_bytes() == (tmp_path / "D" / "saxpy_rocdl.hsaco").read_bytes()
    assert (tmp_path / "amd.bin").read_bytes()[:4] == b"\x7fELF"


def test_default_section_is_rodata_and_isa_gets_a_nul(tmp_path):
    source = write(tmp_path / "k.mlir", SEED.format(target=TARGETS["nvvm"], kind="nvvm"))
    obj = tmp_path / "k.o"
    run = mlirgpu("compile", source, "-o", str(obj), "--format", "isa", "--dump-intermediates", str(tmp_path / "D"))
    assert run.returncode == 0, run.stderr
    isa = (tmp_path / "D" / "kernel_module.isa").read_bytes()
    with open(obj, "rb") as handle:
        elf = ELFFile(handle)
        symbols = {s.name: s for s in elf.get_section_by_name(".symtab").iter_symbols()}
        blob = symbols["kernel_module_binary"]
        section = elf.get_section(blob["st_shndx"])
        assert section.name == ".rodata"
        data = section.data()[blob["st_value"] : blob["st_value"] + blob["st_size"]]
        assert data == isa + b"\0"
        size = symbols["kernel_module_binary_size"]
        size_section = elf.get_section(size["st_shndx"]).data()
        assert int.from_bytes(size_section[size["st_value"] : size["st_value"] + 8], "little") == len(isa) + 1


def test_quoted_module_names_stay_inside_the_dump_dir(tmp_path):
    text = SEED.format(target=TARGETS["nvvm"], kind="nvvm").replace("@kernel_module", '@"../../escape me"')
    source = write(tmp_path / "k.mlir", text)
    dumps = tmp_path / "deep" / "D"
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), "--format", "isa", "--dump-intermediates", str(dumps))
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(dumps)) == sorted(
        [f"______escape_me.{s}" for s in ("initial.ll", "linked.ll", "opt.ll", "isa")] + ["mlirgpu.json", "repro.sh"])
    assert sorted(os.listdir(tmp_path / "deep")) == ["D"]


def test_several_targets_get_chip_qualified_names(tmp_path):
    source = os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir")
    src = instantiate(source, tmp_path / "m.mlir", "", 2)
    run = mlirgpu("compile", src, "-o", str(tmp_path / "m.o"), "--format", "bin", "--dump-intermediates", str(tmp_path / "D"))
    assert run.returncode == 0, run.stderr
    names = sorted(os.listdir(tmp_path / "D"))
    assert any(n.endswith(".sm_80.cubin") for n in names) and any(n.endswith(".sm_90.cubin") for n in names)
    with open(tmp_path / "m.o", "rb") as handle:
        symbols = [s.name for s in ELFFile(handle).get_section_by_name(".symtab").iter_symbols()]
    assert sum(1 for s in symbols if s.endswith("_sm_80_binary")) == 1
    assert sum(1 for s in symbols if s.endswith("_sm_90_binary")) == 1


BAD = {
    "syntax": ("gpu.module @m [#nvvm.target<chip = \"sm_90\">] {\n  llvm.func @k( {\n}\n", [], ":2:"),
    "unknown_chip": (SEED.format(target='#nvvm.target<chip = "sm_999">', kind="nvvm"), [], "unknown nvvm chip 'sm_999'"),
    "unknown_amd_chip": (SEED.format(target='#rocdl.target<chip = "gfx9999">', kind="rocdl"), [], "unknown rocdl chip"),
    "old_sm": (SEED.format(target='#nvvm.target<chip = "sm_70">', kind="nvvm"), ["--format", "bin"], "sm_75 or newer"),
    "bad_O": (SEED.format(target='#nvvm.target<chip = "sm_90", O = 7>', kind="nvvm"), [], "optimization level must be a number between 0 and 3"),
    "no_module": ("module {\n  func.func @f() { return }\n}\n", [], "no gpu.module found"),
    "no_target": (SEED.format(target="", kind="nvvm").replace(" []", ""), [], "has no target"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_clear_line_and_no_output(case, tmp_path):
    text, extra, expected = BAD[case]
    source = tmp_path / "bad.mlir"
    source.write_text(text)
    obj = tmp_path / "bad.o"
    obj.write_bytes(b"stale object from an earlier build")
    run = mlirgpu("compile", str(source), "-o", str(obj), *extra)
    assert run.returncode == 1
    assert expected in run.stderr
    first = run.stderr.strip().splitlines()[0]
    assert first.startswith(f"mlirgpu: {source}") and "error:" in first
    assert not obj.exists()
    assert "Traceback" not in run.stderr


def test_libdevice_needed_without_toolkit(tmp_path):
    source = instantiate(os.path.join(CORPUS, "math_libdevice.nvvm.mlir"), tmp_path / "m.mlir", "sm_90", 3)
    run = mlirgpu("compile", source, "-o", str(tmp_path / "m.o"), "--format", "isa", "--toolkit", str(tmp_path / "none"))
    assert run.returncode == 1
    assert "from libdevice, but no CUDA toolkit was found" in run.stderr and "nvidia-cuda-nvcc" in run.stderr
    assert not (tmp_path / "m.o").exists()


def test_missing_ptxas_names_what_to_install(tmp_path):
    source = write(tmp_path / "k.mlir", SEED.format(target=TARGETS["nvvm"], kind="nvvm"))
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), "--format", "bin", "--toolkit", str(tmp_path))
    assert run.returncode == 1
    assert "ptxas not found" in run.stderr and "nvidia-cuda-nvcc" in run.stderr


def test_unwritable_dump_dir_is_an_error(tmp_path):
    source = write(tmp_path / "k.mlir", SEED.format(target=TARGETS["nvvm"], kind="nvvm"))
    blocker = tmp_path / "file"
    blocker.write_text("")
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), "--format", "isa",
                  "--dump-intermediates", str(blocker / "D"))
    assert run.returncode == 1
    assert "cannot write the dump folder" in run.stderr
    assert not (tmp_path / "k.o").exists()


def test_non_utf8_input(tmp_path):
    source = tmp_path / "k.mlir"
    source.write_bytes(b"module {\n\xff\xfe}\n")
    run = mlirgpu("compile", str(source), "-o", str(tmp_path / "k.o"))
    assert run.returncode == 1 and f"{source}:2: error: not a UTF-8 text file" in run.stderr


def test_llvm_fatal_error_is_reported_not_fatal(tmp_path):
    # PTX 6.0 cannot express sm_90: LLVM's NVPTX back end aborts the process (upstream mlir-opt dies too).
    target = '#nvvm.target<chip = "sm_90", features = "+ptx60">'
    source = write(tmp_path / "k.mlir", SEED.format(target=target, kind="nvvm"))
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), "--format", "isa")
    assert run.returncode == 1
    assert "module @kernel_module (nvvm sm_90)" in run.stderr and "LLVM crashed" in run.stderr
    assert "Traceback" not in run.stderr


def test_cuda_wheel_layout_is_found(tmp_path, monkeypatch):
    """The nvidia-cuda-nvcc + nvidia-nvvm wheels (installed by the bootstrap) form a usable toolkit root."""
    roots = nvcc_wheel_roots()
    assert roots, "the PyPI CUDA wheels are not installed in this environment"
    root = roots[0]
    assert libdevice(root)
    source = write(tmp_path / "k.mlir", SEED.format(target=TARGETS["nvvm"], kind="nvvm"))
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), "--format", "fatbin", "--toolkit", root,
                  "--dump-intermediates", str(tmp_path / "D"))
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "D" / "kernel_module.cubin").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.parametrize("alias", ["object through a linked folder", "object linked to the source"])
def test_outputs_that_alias_through_symlinks_are_refused(tmp_path, alias):
    """Two roles on one file are found through symbolic links too: a folder linked to another, or an output that
    is a link to the source. Nothing is written."""
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", tmp_path / "alias")
    if alias == "object linked to the source":
        os.symlink(source, tmp_path / "out" / "k.o")
        args = ("-o", str(tmp_path / "out" / "k.o"))
    else:
        args = ("-o", str(tmp_path / "out" / "k.o"), "--header", str(tmp_path / "alias" / "k.o"))
    run = mlirgpu("compile", source, *args)
    assert run.returncode == 1 and "are the same file" in run.stderr, run.stderr
    assert sorted(os.listdir(tmp_path / "out")) == (["k.o"] if alias == "object linked to the source" else [])
