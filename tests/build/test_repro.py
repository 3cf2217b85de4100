"""Reproduction: `sh repro.sh` in a copy of a dump folder whose ISA and binaries were deleted remakes them byte for
byte with the stock tools (llc, ptxas, fatbinary, llvm-mc, ld.lld), for every target; the record holds the same
commands; the approximate ones (llvm-link, opt) at least run."""
import filecmp
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT, instantiate

SITE = os.path.join(ROOT, "site_scons")

CASES = {  # corpus file, chip, compile options
    "nvvm saxpy fatbin": ("saxpy.nvvm.mlir", "sm_80", ["--format", "fatbin"]),
    "nvvm libdevice, ptxas options": ("ptxas_opts.nvvm.mlir", "sm_90", ["--format", "fatbin"]),
    "nvvm math libdevice bin, prefix": ("math_libdevice.nvvm.mlir", "sm_90", ["--format", "bin", "--dump-prefix", "p_"]),
    "nvvm two chips": ("vec_scale.multi.nvvm.mlir", "", ["--format", "fatbin"]),
    "rocdl saxpy": ("saxpy.rocdl.mlir", "gfx942", ["--format", "bin"]),
    "rocdl ocml": ("math_ocml.rocdl.mlir", "gfx942", ["--format", "bin"]),
    "rocdl two chips bundle": ("vec_scale.multi.rocdl.mlir", "", ["--format", "fatbin"]),
    "xevm several modules": ("multi_module.xevm.mlir", "bmg", ["--format", "bin"]),
    "neutral for rocdl": ("vecadd.neutral.mlir", "", ["--target", "rocdl", "--chip", "gfx90a", "--format", "bin"]),
    "isa only": ("saxpy.nvvm.mlir", "sm_90", ["--format", "isa"]),
}
REMADE = (".isa", ".cubin", ".fatbin", ".hsaco", ".spv")


@pytest.mark.parametrize("case", sorted(CASES))
def test_repro_sh_remakes_the_isa_and_binaries_byte_for_byte(case, tmp_path, cuda_root):
    corpus, chip, options = CASES[case]
    source = instantiate(os.path.join(CORPUS, corpus), tmp_path / "k.mlir", chip, 3)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--dump-intermediates",
                          "D", *options], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SITE})
    assert run.returncode == 0, run.stderr
    prefix = options[options.index("--dump-prefix") + 1] if "--dump-prefix" in options else ""
    dumps = tmp_path / "D"
    record = json.loads((dumps / f"{prefix}mlirgpu.json").read_text())
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(dumps, copy)
    remade = sorted(name for name in os.listdir(copy) if name.endswith(REMADE))
    assert remade and any(name.endswith(".isa") for name in remade)
    for name in remade:
        (copy / name).unlink()
    run = subprocess.run(["sh", f"{prefix}repro.sh"], cwd=copy, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(os.listdir(copy)) == sorted(os.listdir(dumps))  # nothing missing, nothing left over
    different = [name for name in remade if not filecmp.cmp(dumps / name, copy / name, shallow=False)]
    assert different == []
    # The record holds the commands the script runs (the exact ones), per job and stage.
    script = (copy / f"{prefix}repro.sh").read_text()
    for job in record["jobs"]:
        stages = [entry["stage"] for entry in job["repro"]]
        assert stages[:3] == ["linked.ll", "opt.ll", "isa"]
        assert ("binary" in stages) == ("--format" in options and options[options.index("--format") + 1] != "isa")
        for entry in job["repro"]:
            assert entry["exact"] == (entry["stage"] in ("isa", "binary"))
            assert os.path.basename(entry["argv"][0]) in script


def test_the_approximate_commands_run_and_make_the_same_code(tmp_path, cuda_root):
    """llvm-link and opt remake the linked and optimized IR with other text; llc on opt's output still gives
    the same PTX, so the difference is the text, not the code."""
    source = instantiate(os.path.join(CORPUS, "math_libdevice.nvvm.mlir"), tmp_path / "k.mlir", "sm_90", 3)
    subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--dump-intermediates", "D"],
                   cwd=tmp_path, check=True, env={**os.environ, "PYTHONPATH": SITE})
    record = json.loads((tmp_path / "D" / "mlirgpu.json").read_text())
    job = record["jobs"][0]
    work = tmp_path / "work"
    shutil.copytree(tmp_path / "D", work)
    for entry in job["repro"]:
        if entry["stage"] == "opt.ll":  # from our linked IR, as the script's comment reads
            subprocess.run(entry["argv"], cwd=work, check=True)
        if entry["stage"] == "isa":
            subprocess.run(entry["argv"], cwd=work, check=True)
    assert (work / f"{job['stem']}.isa").read_bytes() == (tmp_path / "D" / f"{job['stem']}.isa").read_bytes()
    linked = next(entry for entry in job["repro"] if entry["stage"] == "linked.ll")
    subprocess.run(linked["argv"], cwd=work, check=True)
    assert "define" in (work / f"{job['stem']}.linked.ll").read_text()


def _mlirgpu(*args, cwd):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SITE})


def _ptx_edit(text):
    return re.sub(r"\bmul\.rn\.f32", "sub.rn.f32", text, count=1)


def _amdgcn_edit(text):
    return text.replace("\ts_endpgm", "\ts_nop 5\n\ts_endpgm", 1)


def _ir_edit(text):
    return text.replace("fmul ", "fsub ", 1)


SUBSTITUTES = {  # corpus file, chip, compile options, the substituted dump, its edit (a binary: made from an ISA edit)
    "nvvm isa, fatbin": ("saxpy.nvvm.mlir", "sm_80", ["--format", "fatbin"], "saxpy_nvvm.isa", _ptx_edit),
    "nvvm isa, bin, prefix": ("saxpy.nvvm.mlir", "sm_90", ["--format", "bin", "--dump-prefix", "p_"],
                              "p_saxpy_nvvm.isa", _ptx_edit),
    "nvvm isa of one of two chips": ("vec_scale.multi.nvvm.mlir", "", ["--format", "fatbin"],
                                     "vec_scale_multi_nvvm.sm_90.isa", _ptx_edit),
    "nvvm opt.ll": ("saxpy.nvvm.mlir", "sm_80", ["--format", "fatbin"], "saxpy_nvvm.opt.ll", _ir_edit),
    "nvvm linked.ll": ("saxpy.nvvm.mlir", "sm_80", ["--format", "bin"], "saxpy_nvvm.linked.ll", _ir_edit),
    "nvvm fatbin": ("saxpy.nvvm.mlir", "sm_80", ["--format", "fatbin"], "saxpy_nvvm.fatbin",
                    ("saxpy_nvvm.isa", _ptx_edit)),
    "nvvm cubin": ("saxpy.nvvm.mlir", "sm_80", ["--format", "bin"], "saxpy_nvvm.cubin", ("saxpy_nvvm.isa", _ptx_edit)),
    "rocdl isa": ("saxpy.rocdl.mlir", "gfx942", ["--format", "bin"], "saxpy_rocdl.isa", _amdgcn_edit),
    "rocdl opt.ll": ("saxpy.rocdl.mlir", "gfx942", ["--format", "bin"], "saxpy_rocdl.opt.ll", _ir_edit),
    "rocdl hsaco": ("saxpy.rocdl.mlir", "gfx942", ["--format", "bin"], "saxpy_rocdl.hsaco",
                    ("saxpy_rocdl.isa", _amdgcn_edit)),
    "xevm opt.ll": ("saxpy.xevm.mlir", "pvc", ["--format", "bin"], "saxpy_xevm.opt.ll", _ir_edit),
}
EMBEDDED = (".fatbin", ".hsaco", ".spv", ".cubin")  # the first one a folder holds is what the object embeds


def _substitute(tmp_path, source, options, name, edit):
    """The folder S holding `name`, edited from the dump of a plain compile (a binary: the one a compile with
    the edited ISA made), as a developer makes it."""
    dumps = tmp_path / "D"
    (tmp_path / "S").mkdir()
    if callable(edit):
        text = (dumps / name).read_text()
        assert edit(text) != text
        (tmp_path / "S" / name).write_text(edit(text))
        return
    isa, isa_edit = edit
    (tmp_path / "S0").mkdir()
    (tmp_path / "S0" / isa).write_text(isa_edit((dumps / isa).read_text()))
    run = _mlirgpu("compile", source, "-o", "k0.o", "--dump-intermediates", "D0", "--substitute", "S0", *options,
                   cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "D0" / name).read_bytes() != (dumps / name).read_bytes()
    shutil.copy(tmp_path / "D0" / name, tmp_path / "S" / name)


@pytest.mark.parametrize("case", sorted(SUBSTITUTES))
def test_repro_sh_after_a_substitute_remakes_what_was_embedded(case, tmp_path, cuda_root):
    """The substituted stage is kept as the build used it and the later stages run from it: in a copy of the dump
    folder whose other ISA and binaries were deleted, repro.sh remakes every file byte for byte, the embedded
    binary included, and says which stage was substituted; without the substituted dump it stops, naming it."""
    corpus, chip, options, name, edit = SUBSTITUTES[case]
    source = instantiate(os.path.join(CORPUS, corpus), tmp_path / "k.mlir", chip, 3)
    run = _mlirgpu("compile", source, "-o", "k.o", "--dump-intermediates", "D", *options, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    _substitute(tmp_path, source, options, name, edit)
    run = _mlirgpu("compile", source, "-o", "k2.o", "--dump-intermediates", "D2", "--substitute", "S", *options,
                   cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    built = tmp_path / "D2"
    prefix = options[options.index("--dump-prefix") + 1] if "--dump-prefix" in options else ""
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(built, copy)
    remade = sorted(n for n in os.listdir(copy) if n.endswith(REMADE) and n != name)
    for remade_name in remade:
        (copy / remade_name).unlink()
    run = subprocess.run(["sh", f"{prefix}repro.sh"], cwd=copy, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(os.listdir(copy)) == sorted(os.listdir(built))
    different = [n for n in os.listdir(built) if not filecmp.cmp(built / n, copy / n, shallow=False)]
    assert different == []
    embedded = next(n for suffix in EMBEDDED for n in sorted(os.listdir(copy)) if n.endswith(suffix))
    assert (copy / embedded).read_bytes() in (tmp_path / "k2.o").read_bytes()
    assert (copy / embedded).read_bytes() not in (tmp_path / "k.o").read_bytes()
    assert f"{name} (module @" in run.stdout and f"is the substitute S/{name}" in run.stdout
    assert f"# substituted: {name} " in (copy / f"{prefix}repro.sh").read_text()
    (copy / name).unlink()
    run = subprocess.run(["sh", f"{prefix}repro.sh"], cwd=copy, capture_output=True, text=True)
    assert run.returncode == 1 and f"{name} is missing: copy the substitute S/{name} here" in run.stderr


HOSTILE = "$(touch MARK1) `touch MARK2` 'q\""  # command substitutions, backticks, quotes and spaces in a name


def _markers(path):
    return sorted(str(p) for p in path.rglob("MARK*") if p.name.startswith("MARK"))


def _hostile_toolkit(tmp_path, cuda_root):
    """The CUDA toolkit seen through a folder named with HOSTILE (its tools and libdevice linked in)."""
    toolkit = tmp_path / f"cuda {HOSTILE}"
    for part in ("bin/ptxas", "bin/fatbinary", "nvvm/libdevice/libdevice.10.bc"):
        (toolkit / part).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.join(cuda_root, part), toolkit / part)
    return toolkit


def test_repro_sh_quotes_every_path_and_value(tmp_path, cuda_root):
    """A toolkit folder named with `$(...)`, backticks, quotes and spaces, a -l library in a folder whose name
    holds a newline and a command, a dump prefix starting with `-`, and the dump folder copied into a folder named
    with all of that and ending in a newline: the script runs nothing of those names (no marker file appears, in
    sh or bash) and still remakes every file byte for byte."""
    from sconsutil import write_library

    toolkit = _hostile_toolkit(tmp_path, cuda_root)
    libraries = tmp_path / "libs\ntouch MARK3\n"
    libraries.mkdir()
    write_library(libraries, 2)
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    run = _mlirgpu("compile", source, "-o", "k.o", "--dump-intermediates", "D", "--dump-prefix=-p_", "--format",
                   "fatbin", "--toolkit", str(toolkit), "-l", str(libraries / "lib.bc"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    script = (tmp_path / "D" / "-p_repro.sh").read_text()
    assert "touch MARK3" in script
    for shell in ("sh", "bash"):
        copy = tmp_path / shell / f"copy {HOSTILE}\n"
        shutil.copytree(tmp_path / "D", copy)
        remade = sorted(name for name in os.listdir(copy) if name.endswith(REMADE))
        assert len(remade) == 3
        for name in remade:
            (copy / name).unlink()
        run = subprocess.run([shell, os.path.join(copy, "-p_repro.sh")], cwd=tmp_path / shell, capture_output=True,
                             text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        assert _markers(tmp_path) == []
        assert sorted(os.listdir(copy)) == sorted(os.listdir(tmp_path / "D"))
        assert [name for name in remade if not filecmp.cmp(tmp_path / "D" / name, copy / name, shallow=False)] == []
    assert _tool_of(script, "PTXAS") == str(toolkit / "bin" / "ptxas")
    # The approximate commands, pasted from their comments into bash, name the hostile library as it is (llvm-link
    # fails on a library it cannot open).
    linked = next(line for line in script.splitlines() if line.startswith("# approx:") and "--internalize" in line)
    work = tmp_path / "work"
    shutil.copytree(tmp_path / "D", work)
    subprocess.run(["bash", "-c", linked[len("# approx: "):]], cwd=work, check=True,
                   env={**os.environ, "LLVM_LINK": _tool_of(script, "LLVM_LINK")})
    assert "@saxpy(" in (work / "-p_saxpy_nvvm.linked.ll").read_text()
    assert _markers(tmp_path) == []


def _tool_of(script, variable):
    """The tool a repro.sh sets `variable` to."""
    line = next(line for line in script.splitlines() if line.startswith(f'if [ -z "${{{variable}:-}}" ]'))
    return shlex.split(line.split(f"then {variable}=", 1)[1].rsplit("; fi", 1)[0])[0]


def test_the_command_scons_echoes_pastes_into_a_shell_as_the_same_compile(tmp_path, cuda_root):
    """A source named `-o.mlir`, a target with backticks, a semicolon and spaces, GPU_OPTS and a library starting
    with `-`: the `mlirgpu compile` line SCons echoes, run by `bash -c`, makes the same object and header, and
    runs nothing."""
    from sconsutil import SCONS, TOOLPATH, write_library

    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "env.GpuObject('k `touch MARK1`; x y', '-o.mlir', GPU_FORMAT='fatbin', GPU_OPTS='--maxrregcount=40',\n"
        "              GPU_LINKLIBS=['-lib.bc'])\n")
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "-o.mlir", "sm_80", 3)
    write_library(tmp_path, 2)
    (tmp_path / "lib.bc").rename(tmp_path / "-lib.bc")
    run = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("mlirgpu compile "))
    built = {name: (tmp_path / name).read_bytes() for name in ("k `touch MARK1`; x y.o", "k `touch MARK1`; x y.h")}
    for name in built:
        (tmp_path / name).unlink()
    shutil.rmtree(tmp_path / "k `touch MARK1`; x y.dumps")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "mlirgpu").write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(SITE)} exec {shlex.quote(sys.executable)} "
                                     "-m mlirgpu \"$@\"\n")
    (bin_dir / "mlirgpu").chmod(0o755)
    run = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert run.returncode == 0, line + "\n" + run.stderr
    assert {name: (tmp_path / name).read_bytes() for name in built} == built
    assert (tmp_path / "k `touch MARK1`; x y.dumps" / "saxpy_nvvm.fatbin").exists()
    assert _markers(tmp_path) == []
