"""A missing tool or library is one line naming it and what to install, whatever switch is on.

A tool is hidden the way a machine without its package lacks it: in a private mount namespace (`unshare -m`,
which needs root or user namespaces) /dev/null is bound over the file, or an empty folder over the folder, so the
search at fixed system places finds nothing. Each case compiles with the stage cache on (warmed first by the same
compile with everything present, so neither a stored entry nor the key of one may stand in for the missing
tool), with it off, and through the compile server; an SCons build fails the same way and builds once the tool is
back. With a team's remote tier (a redis-server of the test's own) the local cache is empty and the remote one
warm. A stand-in tool that ends well without writing its output is named too."""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu.llvm import toolchain
from mlirgpu.targets import cuda, rocm
from sconsutil import SCONS, TOOLPATH
from redis_server import REDIS, Redis

PACKAGE_ROOT = os.path.join(ROOT, "site_scons")
MODES = ("cache", "remote", "no-cache", "server")


@pytest.fixture(scope="module")
def namespaces():
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("hiding a tool needs a private mount namespace (unshare -m: root or user namespaces)")


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """The URL of a redis-server of this module's own, the team's remote tier (None without redis-server)."""
    if REDIS is None:
        yield None
        return
    server = Redis(tmp_path_factory.mktemp("redis"))
    yield server.url()
    server.stop()


def _cuda_roots():
    """Every CUDA root discovery could find (the system's, the PyPI wheels'), resolved."""
    on_path = toolchain.which("ptxas", None)
    roots = [cuda.cuda_toolkit()] + cuda.nvcc_wheel_roots() + \
        ([os.path.dirname(os.path.dirname(os.path.realpath(on_path)))] if on_path else [])
    return sorted({os.path.realpath(root) for root in roots if root})


def _in_cuda(relative):
    return lambda: [path for root in _cuda_roots() for path in [os.path.join(root, relative)] if os.path.exists(path)]


def _rocm_bitcode():
    """Every ROCm device library folder discovery could find."""
    roots = [rocm.rocm_toolkit(), "/opt/rocm"] + [os.environ.get(name) for name in ("ROCM_PATH", "ROCM_ROOT",
                                                                                      "ROCM_HOME")]
    roots += [os.path.dirname(os.path.dirname(path)) for path in glob.glob("/usr/lib/*/amdgcn/bitcode/ocml.bc")]
    return sorted({os.path.realpath(os.path.join(root, "amdgcn")) for root in roots
                   if root and os.path.isdir(os.path.join(root, "amdgcn"))})


def _llvm(name):
    return lambda: [os.path.realpath(toolchain.llvm_tool(name))]


@dataclass(frozen=True)
class Missing:
    source: str  # a corpus file that needs the hidden thing
    chip: str
    hide: object  # () -> the paths to hide
    says: tuple  # what the one line names: the missing thing, the package
    args: tuple = ()


CASES = {
    "nvvm-ptxas": Missing("saxpy.nvvm.mlir", "sm_80", _in_cuda("bin/ptxas"), ("ptxas not found", "nvidia-cuda-nvcc")),
    "nvvm-fatbinary": Missing("saxpy.nvvm.mlir", "sm_80", _in_cuda("bin/fatbinary"),
                              ("fatbinary not found", "nvidia-cuda-nvcc")),
    "nvvm-libdevice": Missing("math_libdevice.nvvm.mlir", "sm_80", _in_cuda(cuda.LIBDEVICE),
                              ("from libdevice", "nvidia-cuda-nvcc")),
    "rocdl-device-libs": Missing("math_ocml.rocdl.mlir", "gfx942", _rocm_bitcode,
                                 ("ocml.bc not found", "apt install rocm-device-libs")),
    "rocdl-ld.lld": Missing("saxpy.rocdl.mlir", "gfx942", _llvm("ld.lld"), ("ld.lld", "apt install lld-22")),
    "rocdl-llvm-mc": Missing("saxpy.rocdl.mlir", "gfx942", _llvm("llvm-mc"), ("llvm-mc", "apt install llvm-22")),
    "xevm-mlir-opt": Missing("vecadd.neutral.mlir", "", _llvm("mlir-opt"), ("mlir-opt", "mlir-22-tools"),
                             ("--target", "xevm")),  # target-neutral code is lowered by mlir-opt
    "xevm-mlir-translate": Missing("saxpy.xevm.mlir", "bmg", _llvm("mlir-translate"),
                                   ("mlir-translate", "mlir-22-tools")),
}


def _env(tmp_path, mode, remote=None, **extra):
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, MLIRGPU_SERVER="off", **extra)
    if mode == "no-cache":
        env["MLIRGPU_CACHE"] = "off"
    if mode == "remote":  # an empty local cache: only the remote tier may answer
        env.update(MLIRGPU_CACHE_DIR=str(tmp_path / "local-cache"), MLIRGPU_REMOTE_CACHE=remote)
    if mode == "server":
        folder = tmp_path / "server"
        folder.mkdir(mode=0o700, exist_ok=True)
        env.update(MLIRGPU_SERVER="on", MLIRGPU_SERVER_DIR=str(folder), MLIRGPU_SERVER_IDLE="60")
    return env


def _mlirgpu(*args):
    return " ".join(shlex.quote(arg) for arg in [sys.executable, "-m", "mlirgpu", *args])


def _hidden(paths, empty, then):
    """A shell command running `then` where each of `paths` is hidden (in a private mount namespace)."""
    mounts = [f"mount --bind {'/dev/null' if os.path.isfile(path) else shlex.quote(str(empty))} {shlex.quote(path)}"
              for path in paths]
    return ["unshare", "-m", "sh", "-c", " && ".join(mounts + ["true"]) + " || exit 99\n" + then]


def _compile_hidden(tmp_path, mode, paths, source, extra=(), remote=None):
    """Compile `source` where `paths` are hidden, in `mode`: (the run, served commands or None). Through the
    server, its status is asked and it is stopped in the same namespace (a server lives where it was started)."""
    then = _mlirgpu("compile", source, "-o", "k.o", "--header", "k.h", *extra) + "; code=$?\n"
    if mode == "server":
        then += _mlirgpu("server", "status") + "\n" + _mlirgpu("server", "stop") + " >/dev/null 2>&1\n"
    then += "exit $code\n"
    empty = tmp_path / "empty"
    empty.mkdir(exist_ok=True)
    run = subprocess.run(_hidden(paths, empty, then), cwd=os.path.dirname(source),
                         env=_env(tmp_path, mode, remote), capture_output=True, text=True, timeout=180)
    served = re.search(r"served (\d+) commands", run.stdout)
    return run, (int(served.group(1)) if served else None)


def _one_line_error(stderr, says):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert " error: " in lines[0] and all(part in lines[0] for part in says), stderr
    return lines[0]


_warmed = set()


def _warm(tmp_path_factory, case, remote):
    """The source of `case` in a folder of its own, compiled once with everything present and the stage cache on:
    every entry a compile with the tool would use is stored, here and in the remote tier."""
    key = (case.source, case.chip)
    folder = tmp_path_factory.mktemp("warm")
    source = instantiate(os.path.join(CORPUS, case.source), folder / "k.mlir", case.chip, 2)
    if key not in _warmed:
        run = subprocess.run(shlex.split(_mlirgpu("compile", source, "-o", "k.o", *case.args)), cwd=folder,
                             capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT, MLIRGPU_SERVER="off",
                                                 **({"MLIRGPU_REMOTE_CACHE": remote} if remote else {})))
        assert run.returncode == 0, run.stderr
        os.remove(folder / "k.o")
        _warmed.add(key)
    return source


@pytest.mark.parametrize("name", sorted(CASES))
def test_missing_tool_is_the_same_line_with_cache_without_and_served(namespaces, remote, tmp_path_factory, tmp_path,
                                                                     name):
    case = CASES[name]
    paths = case.hide()
    assert paths, f"nothing to hide for {name}: is the tool installed (tools/bootstrap)?"
    source = _warm(tmp_path_factory, case, remote)
    lines = {}
    for mode in MODES if remote else [mode for mode in MODES if mode != "remote"]:
        run, served = _compile_hidden(tmp_path, mode, paths, source, case.args, remote)
        assert run.returncode not in (0, 99), (mode, run.stderr)
        lines[mode] = _one_line_error(run.stderr, case.says)
        assert sorted(os.listdir(os.path.dirname(source))) == ["k.mlir"], mode  # no object, no header
        if mode == "server":
            assert served and served >= 1, run.stdout  # the compile was the server's
    assert len(set(lines.values())) == 1, lines
    assert lines["no-cache"].startswith(f"mlirgpu: {source}:"), lines  # at the file, as every error


@pytest.mark.parametrize("name", ["rocdl-device-libs", "nvvm-ptxas"])
def test_scons_build_without_a_tool_fails_in_one_line_and_builds_once_it_is_back(namespaces, tmp_path, name):
    case = CASES[name]
    target = case.source.split(".")[1]
    (tmp_path / "SConstruct").write_text(
        f'env = Environment(tools=["default", "mlirgpu"], toolpath=[{TOOLPATH!r}])\n'
        f'env.GpuObject("k", "k.mlir", GPU_TARGET="{target}", GPU_CHIP="{case.chip}")\n')
    instantiate(os.path.join(CORPUS, case.source), tmp_path / "k.mlir", case.chip, 2)
    empty = tmp_path.parent / f"{tmp_path.name}-empty"
    empty.mkdir()
    env = dict(os.environ, MLIRGPU_SERVER="off")
    run = subprocess.run(_hidden(case.hide(), empty, f"exec {shlex.quote(SCONS)} -Q"), cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode not in (0, 99), run.stdout + run.stderr
    line = _one_line_error(run.stderr, case.says)
    assert line.startswith("scons: *** [k.o] k.mlir:"), line
    assert not (tmp_path / "k.o").exists() and not (tmp_path / "k.h").exists()
    rebuilt = subprocess.run([SCONS, "-Q"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "mlirgpu compile k.mlir" in rebuilt.stdout and (tmp_path / "k.o").is_file()


def _llvm_tools(*names):
    return lambda: [path for name in names for path in _llvm(name)()]


@pytest.mark.parametrize("source,chip,hide,extra", [
    ("saxpy.rocdl.mlir", "gfx942", _rocm_bitcode, ()),
    ("saxpy.xevm.mlir", "bmg", _llvm("mlir-opt"), ()),
    ("saxpy.xevm.mlir", "bmg", _llvm_tools("llc", "opt", "llvm-link"), ("--dump-intermediates", "dumps")),
], ids=["rocdl-without-device-libs", "xevm-without-mlir-opt", "xevm-dumps-without-llc-opt-llvm-link"])
def test_what_a_compile_does_not_use_may_be_missing(namespaces, tmp_path, source, chip, hide, extra):
    """Cache keys, the dependency list and repro.sh are made of what exists: a module that calls no device library,
    one read without mlir-opt, and dumps whose repro.sh names tools the compile does not run (it names them by
    their versioned names, for whoever runs it) compile."""
    source = instantiate(os.path.join(CORPUS, source), tmp_path / "k.mlir", chip, 2)
    for mode in ("cache", "no-cache"):
        run, _served = _compile_hidden(tmp_path, mode, hide(), source, extra)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        assert (tmp_path / "k.o").is_file()
        os.remove(tmp_path / "k.o")
        os.remove(tmp_path / "k.h")
        if extra:
            assert "llc-22" in (tmp_path / "dumps" / "repro.sh").read_text()
            shutil.rmtree(tmp_path / "dumps")


_INSTALL_MEANWHILE = """
import os, sys
from mlirgpu import CompileOptions, compile_file
from mlirgpu.errors import CompileError
source, stash, root = sys.argv[1:]
try:
    compile_file(source, CompileOptions())
except CompileError as exc:
    print(exc)
os.symlink(stash, os.path.join(root, "amdgcn"))  # the user installs what the error named
compile_file(source, CompileOptions())
print("compiled")
"""


def test_device_libraries_installed_while_a_process_lives_are_found(namespaces, tmp_path):
    """A search that found nothing is not remembered: a long-lived process (its compile workers stay warm) that
    told the user to install the device libraries compiles once they are there."""
    source = instantiate(os.path.join(CORPUS, "math_ocml.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 2)
    bitcode = _rocm_bitcode()
    stash, rocm_root, empty = tmp_path / "stash", tmp_path / "rocm", tmp_path / "empty"
    for folder in (stash, rocm_root, empty):
        folder.mkdir()
    script = (f"mount --bind {shlex.quote(bitcode[0])} {shlex.quote(str(stash))} && "
              + " && ".join(f"mount --bind {shlex.quote(str(empty))} {shlex.quote(path)}" for path in bitcode)
              + " || exit 99\nexec \"$0\" \"$@\"")
    run = subprocess.run(["unshare", "-m", "sh", "-c", script, sys.executable, "-c", _INSTALL_MEANWHILE, source,
                          str(stash), str(rocm_root)], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                         env=dict(os.environ, PYTHONPATH=PACKAGE_ROOT, ROCM_PATH=str(rocm_root)))
    assert run.returncode == 0, run.stdout + run.stderr
    first, second = run.stdout.strip().splitlines()
    assert "ocml.bc not found" in first and "rocm-device-libs" in first and second == "compiled"


def _fake_toolkit(folder, real, links, stub):
    """A toolkit folder of links to the real one's files (`links`), with `stub`: a script that ends with 0 and
    writes nothing."""
    for relative in links:
        os.makedirs(folder / os.path.dirname(relative), exist_ok=True)
        os.symlink(os.path.join(real, relative), folder / relative)
    os.makedirs(folder / os.path.dirname(stub), exist_ok=True)
    (folder / stub).write_text("#!/bin/sh\nexit 0\n")
    (folder / stub).chmod(0o755)
    return folder


_CUDA_FILES = ("bin/ptxas", "bin/fatbinary", cuda.LIBDEVICE)
STUBS = {  # tool -> (source, chip, its file in the toolkit, the toolkit's other files, what the line says)
    "ptxas": ("saxpy.nvvm.mlir", "sm_80", "bin/ptxas", _CUDA_FILES,
              "ptxas ended without an error but wrote no saxpy_nvvm.cubin"),
    "fatbinary": ("saxpy.nvvm.mlir", "sm_80", "bin/fatbinary", _CUDA_FILES,
                  "fatbinary ended without an error but wrote no saxpy_nvvm.fatbin"),
    "ld.lld": ("saxpy.rocdl.mlir", "gfx942", "llvm/bin/ld.lld", ("amdgcn",),
               "(ld.lld) ended without an error but wrote no saxpy_rocdl.hsaco"),
}


@pytest.mark.parametrize("tool,mode", [("ptxas", "cache"), ("ptxas", "no-cache"), ("ptxas", "server"),
                                       ("fatbinary", "cache"), ("ld.lld", "cache")])
def test_a_tool_that_writes_nothing_is_named(tmp_path, tool, mode, cuda_root):
    """A stand-in tool ending with 0 and no output, in a toolkit folder of its own (--toolkit)."""
    source, chip, stub, links, says = STUBS[tool]
    real = cuda_root if source.endswith(".nvvm.mlir") else rocm.rocm_toolkit()
    fake = _fake_toolkit(tmp_path / "toolkit", real, [link for link in links if link != stub], stub)
    work = tmp_path / "work"
    work.mkdir()
    source = instantiate(os.path.join(CORPUS, source), work / "k.mlir", chip, 2)
    args = shlex.split(_mlirgpu("compile", source, "-o", "k.o", "--header", "k.h", "--toolkit", str(fake)))
    run = subprocess.run(args, cwd=work, env=_env(tmp_path, mode), capture_output=True, text=True, timeout=180)
    if mode == "server":
        subprocess.run(shlex.split(_mlirgpu("server", "stop")), env=_env(tmp_path, mode), capture_output=True)
    assert run.returncode == 1, run.stderr
    _one_line_error(run.stderr, (says, str(fake / stub)))
    assert sorted(os.listdir(work)) == ["k.mlir"]
