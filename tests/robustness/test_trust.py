"""Never a wrong build: what SCons calls up to date is what a clean build makes.

Each test changes something a build depends on in a way timestamps do not show (or kills the build), rebuilds,
and compares every file with a clean build of the same inputs.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from corpusutil import CORPUS, instantiate
from mlirgpu.llvm import toolchain
from mlirgpu.targets.cuda import cuda_toolkit
from mlirgpu.targets.rocm import rocm_toolkit
from sconsutil import SCONS, TOOLPATH, compiled, files, same_tree, scons

SCONSTRUCT = """\
import os
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}], ENV={{"PATH": os.environ["PATH"]}})
env.SetDefault(GPU_TOOLKIT=ARGUMENTS.get("CUDA", ""))
env.GpuObject("nv", "nv.mlir")
env.GpuObject("ocml", "ocml.mlir", GPU_TOOLKIT=ARGUMENTS.get("ROCM", ""))
env.GpuObject("plain", "plain.mlir", GPU_TOOLKIT=ARGUMENTS.get("ROCM", ""))
SConscript("sub/SConscript", exports="env")
"""
SUB = """\
Import("env")
local = env.Clone()
local.Replace(GPU_TOOLKIT=ARGUMENTS.get("OTHER_CUDA", ""))
local.GpuObject("other", "other.mlir")
"""


def make_project(path):
    path.mkdir(parents=True)
    (path / "SConstruct").write_text(SCONSTRUCT.format(toolpath=TOOLPATH))
    (path / "sub").mkdir()
    (path / "sub" / "SConscript").write_text(SUB)
    instantiate(os.path.join(CORPUS, "math_libdevice.nvvm.mlir"), path / "nv.mlir", "sm_80", 2)
    instantiate(os.path.join(CORPUS, "math_ocml.rocdl.mlir"), path / "ocml.mlir", "gfx942", 2)
    instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), path / "plain.mlir", "gfx942", 2)
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), path / "sub" / "other.mlir", "sm_80", 2)
    return path


def make_toolkits(path):
    """A CUDA root whose ptxas is a wrapper script (its bytes can change in place) and whose libdevice is a copy,
    and a ROCm root with copies of the device libraries."""
    real = cuda_toolkit()
    cuda = path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "nvvm" / "libdevice").mkdir(parents=True)
    shutil.copy(os.path.join(real, "nvvm", "libdevice", "libdevice.10.bc"), cuda / "nvvm" / "libdevice")
    (cuda / "bin" / "ptxas").write_text(f'#!/bin/sh\n# version 1\nexec {os.path.join(real, "bin", "ptxas")} "$@"\n')
    (cuda / "bin" / "ptxas").chmod(0o755)
    os.symlink(os.path.join(real, "bin", "fatbinary"), cuda / "bin" / "fatbinary")
    rocm = path / "rocm"
    shutil.copytree(os.path.join(rocm_toolkit(), "amdgcn", "bitcode"), rocm / "amdgcn" / "bitcode")
    return str(cuda), str(rocm)


def build(project, *args):
    return scons(project, "DUMP=1", *args)


def same_as_clean_build(project, tmp_path, *args):
    """Every file of `project` equals a clean build of a copy of its sources."""
    clean = tmp_path / f"clean-{project.name}-{len(list(tmp_path.glob('clean-*')))}"
    shutil.copytree(project, clean, ignore=shutil.ignore_patterns("*.o", "*.h", "*.dumps", ".sconsign*"))
    build(clean, *args)
    names = files(clean)
    assert files(project) == names
    assert same_tree(clean, project, names) == []


def test_same_size_edit_with_kept_timestamps_is_seen(tmp_path):
    """A module renamed in place (same size, modification time put back) and a file replaced by `cp -p` of
    another: the scan cache is keyed by content, so the declared dumps and objects are right."""
    project = make_project(tmp_path / "p")
    build(project)
    source = project / "plain.mlir"
    stat = source.stat()
    source.write_text(source.read_text().replace("@saxpy_rocdl", "@saxpy_rocdX"))
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_size == stat.st_size
    assert compiled(build(project)) == ["plain.mlir"]
    assert "plain.dumps/saxpy_rocdX.hsaco" in files(project)
    same_as_clean_build(project, tmp_path)
    other = tmp_path / "elsewhere.mlir"
    other.write_text(source.read_text().replace("@saxpy_rocdX", "@saxpy_rocdY"))
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))  # older than the object: clock skew
    subprocess.run(["cp", "-p", str(other), str(source)], check=True)
    assert compiled(build(project)) == ["plain.mlir"]
    same_as_clean_build(project, tmp_path)


def test_device_libraries_are_dependencies(tmp_path):
    """Changing ocml.bc rebuilds exactly the object that links it; changing libdevice exactly the NVVM ones of
    that toolkit. The libraries are dependencies in SCons's tree."""
    project = make_project(tmp_path / "p")
    cuda, rocm = make_toolkits(tmp_path)
    args = (f"CUDA={cuda}", f"ROCM={rocm}", f"OTHER_CUDA={cuda_toolkit()}")
    build(project, *args)
    tree = scons(project, "DUMP=1", "--tree=prune", "ocml.o", *args).stdout
    assert "ocml.bc" in tree and "ockl.bc" in tree
    assert "ocml.bc" not in scons(project, "DUMP=1", "--tree=prune", "plain.o", *args).stdout
    _edit_bitcode(os.path.join(rocm, "amdgcn", "bitcode", "ocml.bc"))
    assert compiled(build(project, *args)) == ["ocml.mlir"]
    _edit_bitcode(os.path.join(cuda, "nvvm", "libdevice", "libdevice.10.bc"))
    assert compiled(build(project, *args)) == ["nv.mlir"]
    assert "up to date" in build(project, *args).stdout


def test_one_source_with_two_toolkits_depends_on_each_libdevice(tmp_path):
    """One source, two objects of one environment that differ only in GPU_TOOLKIT: each object depends on its own
    toolkit's libdevice (the scan of a source is per object, not per source), so editing one rebuilds that object."""
    project = tmp_path / "p"
    project.mkdir()
    instantiate(os.path.join(CORPUS, "math_libdevice.nvvm.mlir"), project / "k.mlir", "sm_80", 2)
    first, _ = make_toolkits(tmp_path / "one")
    second, _ = make_toolkits(tmp_path / "two")
    (project / "SConstruct").write_text(
        f"import os\nenv = Environment(tools=['mlirgpu'], toolpath=[{TOOLPATH!r}], ENV={{'PATH': os.environ['PATH']}})\n"
        f"env.GpuObject('a', 'k.mlir', GPU_TOOLKIT={first!r})\nenv.GpuObject('b', 'k.mlir', GPU_TOOLKIT={second!r})\n")
    build(project)
    for name, toolkit, other in (("a.o", first, second), ("b.o", second, first)):
        tree = scons(project, "DUMP=1", "--tree=prune", name).stdout
        assert os.path.join(toolkit, "nvvm", "libdevice", "libdevice.10.bc") in tree
        assert os.path.join(other, "nvvm", "libdevice", "libdevice.10.bc") not in tree
    _edit_bitcode(os.path.join(second, "nvvm", "libdevice", "libdevice.10.bc"))
    run = build(project)
    assert "-o b.o" in run.stdout and "-o a.o" not in run.stdout
    assert "up to date" in build(project).stdout


def _edit_bitcode(path):
    """Add an unused function to a bitcode library (its content changes, it stays valid)."""
    dis = subprocess.run([toolchain.llvm_tool("llvm-dis"), path, "-o", "-"], capture_output=True, text=True,
                         check=True).stdout
    dis += "\ndefine internal void @mlirgpu_test_unused() {\n  ret void\n}\n"
    subprocess.run([toolchain.llvm_tool("llvm-as"), "-o", path], input=dis, text=True, check=True)


def test_tool_upgraded_in_place_rebuilds_its_objects(tmp_path):
    """ptxas rewritten in place with its size and modification time kept rebuilds the objects of that toolkit
    (the signature holds each tool's version and bytes), including one whose SConscript set GPU_TOOLKIT."""
    project = make_project(tmp_path / "p")
    cuda, rocm = make_toolkits(tmp_path)
    args = (f"CUDA={cuda}", f"ROCM={rocm}", f"OTHER_CUDA={cuda}")
    build(project, *args)
    ptxas = os.path.join(cuda, "bin", "ptxas")
    stat = os.stat(ptxas)
    text = open(ptxas).read()
    with open(ptxas, "w") as handle:
        handle.write(text.replace("version 1", "version 2"))
    os.utime(ptxas, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(ptxas).st_size == stat.st_size
    assert compiled(build(project, *args)) == ["nv.mlir", "sub/other.mlir"]
    assert "up to date" in build(project, *args).stdout
    # The SConscript's own toolkit: pointing it elsewhere rebuilds only its object.
    assert compiled(build(project, f"CUDA={cuda}", f"ROCM={rocm}", f"OTHER_CUDA={cuda_toolkit()}")) == \
        ["sub/other.mlir"]


def _workers_of(pid):
    """The Python processes (zygote, workers, stage runners) descending from the build process `pid`, as (pid,
    start time) pairs: a zygote or worker forked from the build keeps the build's command line, so they are found
    by parentage, and told apart from a later process given the same pid by their start time."""
    python = os.path.realpath(sys.executable)
    parents, found = {}, []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _stat(int(entry)):
            parents[int(entry)] = int(_stat(int(entry))[1])
    for child in parents:
        try:
            if os.path.realpath(f"/proc/{child}/exe") != python:
                continue
        except OSError:
            continue
        ancestor = parents.get(child)
        while ancestor not in (None, 0, 1, pid):
            ancestor = parents.get(ancestor)
        if ancestor == pid:
            found.append((child, _stat(child)[19]))
    return found


def _stat(pid):
    """The fields of /proc/PID/stat after the command name (state first), or None for a process gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields


def _still_running(workers):
    """Those of `workers` ((pid, start time) pairs) that still run."""
    return [(pid, started) for pid, started in workers if (_stat(pid) or [None] * 20)[19] == started]


def _snapshot(folder):
    return {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in files(folder)}


def _compiling(ptxas):
    """Whether a worker runs `ptxas` on a module now (not a `ptxas --version` of the build tool)."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if ptxas.encode() in argv and b"-arch" in argv:
            return True
    return False


@pytest.mark.parametrize("delay", [0.0, 0.7, 1.4])
def test_killing_the_build_process_alone_leaves_no_writer(tmp_path, delay):
    """kill -9 of SCons alone (not its process group) at several points while compiles run (ptxas made slow):
    its workers and zygote die with it at once, nothing is written into the tree afterwards, and after an edit
    the rebuild equals a clean build."""
    project = make_project(tmp_path / "p")
    cuda, rocm = make_toolkits(tmp_path)
    ptxas = os.path.join(cuda, "bin", "ptxas")
    with open(ptxas) as handle:
        text = handle.read()
    with open(ptxas, "w") as handle:
        handle.write(text.replace("# version 1", "sleep 2"))
    process = subprocess.Popen([SCONS, "-Q", "-j2", "DUMP=1", f"CUDA={cuda}", f"OTHER_CUDA={cuda}", f"ROCM={rocm}"],
                               cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not _compiling(ptxas) and time.monotonic() < deadline:  # a worker is inside a compile
        time.sleep(0.02)
    time.sleep(delay)
    workers = _workers_of(process.pid)
    assert workers, "no worker was running: the test would prove nothing"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    time.sleep(0.5)
    assert _still_running(workers) == [], f"workers {workers} outlived the build"
    before = _snapshot(project)
    time.sleep(3)  # a surviving worker would have finished its compile (ptxas sleeps 2 s) and written by now
    assert _snapshot(project) == before
    source = project / "plain.mlir"
    source.write_text(source.read_text().replace("@saxpy_rocdl", "@saxpy_edited"))
    build(project, "-j2")
    same_as_clean_build(project, tmp_path, "-j2")


def test_leftover_temporary_files_are_removed(tmp_path):
    """Temp files an interrupted write left beside an output or in a dump folder go at the next build."""
    project = make_project(tmp_path / "p")
    build(project)
    leftovers = [project / ".plain.o.mlirgpu-tmp-0badf00d", project / "plain.dumps" / ".saxpy_rocdl.isa.mlirgpu-tmp-1"]
    for leftover in leftovers:
        leftover.write_text("half a file")
    (project / "plain.mlir").write_text((project / "plain.mlir").read_text() + "\n")
    build(project)
    assert not any(leftover.exists() for leftover in leftovers)


def test_a_shared_dump_folder_keeps_the_temp_files_of_other_compiles(tmp_path):
    """Meson's layout: objects share one dump folder, each with a prefix. A compile removes the leftovers of its
    own files only, never the temp file another compile is writing at that moment."""
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "a.mlir", "gfx942", 3)
    folder = tmp_path / "build"
    folder.mkdir()
    own = folder / ".a.saxpy_rocdl.isa.mlirgpu-tmp-1"
    others = folder / ".b.saxpy_rocdl.isa.mlirgpu-tmp-2"
    for leftover in (own, others):
        leftover.write_text("half a file")
    subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(folder / "a.o"),
                    "--dump-intermediates", str(folder), "--dump-prefix", "a."], check=True)
    assert not own.exists() and others.exists()
    assert (folder / "a.saxpy_rocdl.isa").exists()


def test_damaged_caches_only_cost_time(tmp_path):
    """Every entry of the tool, scan and library caches truncated, emptied or replaced: the build is right."""
    project = make_project(tmp_path / "p")
    cache, facts = tmp_path / "cache", tmp_path / "user-cache"
    env = dict(os.environ, MLIRGPU_CACHE_DIR=str(cache), XDG_CACHE_HOME=str(facts))
    scons_env = lambda *args: subprocess.run([SCONS, "-Q", "DUMP=1", *args], cwd=project, env=env,  # noqa: E731
                                             capture_output=True, text=True)
    assert scons_env().returncode == 0
    entries = [os.path.join(d, n) for folder in (cache, facts) for d, _s, names in os.walk(folder) for n in names] + \
        [str(project / ".sconsign.mlirgpu.json")]
    assert any(entry.endswith("tools.json") for entry in entries)
    assert len(entries) > 3
    for index, entry in enumerate(entries):
        with open(entry, "r+b") as handle:
            if index % 3 == 0:
                handle.truncate(max(0, os.path.getsize(entry) // 2))
            elif index % 3 == 1:
                handle.truncate(0)
            else:
                handle.write(b"mlirgpu-cache-1\n" + b"\0" * 32 + b'{"foreign": [1, 2]}')
    for name in ("plain.mlir", "ocml.mlir", "nv.mlir"):
        (project / name).write_text((project / name).read_text() + "// edited\n")
    run = scons_env()
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    same_as_clean_build(project, tmp_path)


def test_a_damaged_cachedir_entry_is_named(tmp_path):
    """A dump SCons restores from CacheDir damaged: the artifacts step checks every file against its record."""
    project = make_project(tmp_path / "p")
    (project / "SConstruct").write_text(f"CacheDir({str(tmp_path / 'cachedir')!r})\n" +
                                        (project / "SConstruct").read_text())
    build(project)
    scons(project, "DUMP=1", "-c")
    cached = [os.path.join(d, n) for d, _s, names in os.walk(tmp_path / "cachedir") for n in names]
    victim = next(path for path in cached if open(path, "rb").read().startswith(b"\x7fELF")
                  and b"amdhsa" in open(path, "rb").read())
    with open(victim, "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xde\xad\xbe\xef")
    run = scons(project, "DUMP=1", "gpu-artifacts", check=False)
    assert run.returncode != 0 and "Retrieved" in run.stdout
    assert re.search(r"differs from what the compile wrote \(changed since, or restored damaged from a cache\)",
                     run.stderr), run.stderr
