"""Faults and safety: crashing, failing and hanging tools, kill -9, a full disk, odd module names, temporary
files, reproducible outputs. After every fault the next build equals a clean build."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu import CompileOptions, compile_file
from mlirgpu.llvm import toolchain
from mlirgpu.targets.cuda import cuda_toolkit
from mlirgpu.targets.rocm import rocm_toolkit
from mlirgpu.pipeline.scan import planned_outputs
from sconsutil import SCONS, TOOLPATH, files, same_tree

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))

FAKES = {
    "segfault": "#!/bin/sh\nkill -SEGV $$\n",
    "garbage": "#!/bin/sh\nprintf '\\001\\002 @@@ not a real tool @@@\\n' >&2\nexit 3\n",
    "hang": "#!/bin/sh\necho \"$*\" >> \"$0.runs\"\nsleep 60\n",  # each run's arguments, for counting them
    "partial": "#!/bin/sh\nfor a in \"$@\"; do case \"$prev\" in -o) printf 'half' > \"$a\";; esac; prev=$a; done\nexit 1\n",
}


def fake_tool(folder, name, kind):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(FAKES[kind])
    path.chmod(0o755)
    return path


def toolkits(tmp_path, tool, kind):
    """A CUDA root, a ROCm root and an MLIR bin folder where `tool` is a fake of the given kind."""
    cuda = tmp_path / "cuda"
    real_cuda = cuda_toolkit()
    (cuda / "bin").mkdir(parents=True)
    for name in ("ptxas", "fatbinary"):
        os.symlink(os.path.join(real_cuda, "bin", name), cuda / "bin" / name) if name != tool else None
    os.symlink(os.path.join(real_cuda, "nvvm"), cuda / "nvvm")
    rocm = tmp_path / "rocm"
    (rocm / "llvm" / "bin").mkdir(parents=True)
    os.symlink(os.path.join(rocm_toolkit(), "amdgcn"), rocm / "amdgcn")
    if tool != "ld.lld":
        os.symlink(toolchain.llvm_tool("ld.lld"), rocm / "llvm" / "bin" / "ld.lld")
    mlir = tmp_path / "mlirbin"
    mlir.mkdir()
    for name in ("mlir-opt", "mlir-translate"):
        if name != tool:
            os.symlink(toolchain.llvm_tool(name), mlir / name)
    folder = {"ptxas": cuda / "bin", "ld.lld": rocm / "llvm" / "bin", "mlir-translate": mlir}[tool]
    fake_tool(folder, tool, kind)
    return str(cuda), str(rocm), str(mlir)


@pytest.mark.parametrize("kind", sorted(FAKES))
@pytest.mark.parametrize("tool", ["ptxas", "ld.lld", "mlir-translate"])
def test_cli_survives_broken_tools(tool, kind, tmp_path, served):
    cuda, rocm, mlir = toolkits(tmp_path, tool, kind)
    family, toolkit = ("rocdl", rocm) if tool == "ld.lld" else ("nvvm", cuda)
    chip = "gfx942" if family == "rocdl" else "sm_80"
    source = instantiate(os.path.join(CORPUS, f"saxpy.{family}.mlir"), tmp_path / "k.mlir", chip, 3)
    out = tmp_path / "k.o"
    env = dict(ENV, MLIR_BIN=mlir, MLIRGPU_TOOL_TIMEOUT="3", TMPDIR=str(tmp_path / "tmp"), **served)
    (tmp_path / "tmp").mkdir()
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(out), "--format", "bin",
                          "--toolkit", toolkit], capture_output=True, text=True, env=env)
    assert time.monotonic() - started < 30
    assert run.returncode == 1, run.stderr
    line = run.stderr.strip().splitlines()[0]
    assert line.startswith(f"mlirgpu: {source}") and tool in line, line
    expected = {"segfault": "crashed (SIGSEGV)", "hang": "did not finish within 3 s", "garbage": "not a real tool",
                "partial": "failed"}[kind]
    assert expected in line, line
    assert not out.exists() and "Traceback" not in run.stderr
    assert os.listdir(tmp_path / "tmp") == []  # temporary files are removed, also after a failure
    if kind == "hang":  # one run past the time limit is the answer: no tool that hung is run for the input again
        folder = {"ptxas": os.path.join(cuda, "bin"), "ld.lld": os.path.join(rocm, "llvm", "bin"),
                  "mlir-translate": mlir}[tool]
        with open(os.path.join(folder, tool + ".runs"), encoding="utf-8") as handle:
            runs = [line for line in handle.read().splitlines() if line not in ("--version", "--help")]  # not probes
        assert len(runs) == 1, runs


SCONSTRUCT = """\
import os
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}], ENV=os.environ)
env.Replace(GPU_TOOLKIT=ARGUMENTS.get("CUDA", ""))
for name in ("saxpy", "math", "many"):
    env.GpuObject(name, name + ".mlir")
env.GpuObject("amd", "amd.mlir", GPU_TOOLKIT=ARGUMENTS.get("ROCM", ""))
"""


def project(path):
    path.mkdir(parents=True, exist_ok=True)
    (path / "SConstruct").write_text(SCONSTRUCT.format(toolpath=TOOLPATH))
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), path / "saxpy.mlir", "sm_80", 3)
    instantiate(os.path.join(CORPUS, "math_libdevice.nvvm.mlir"), path / "math.mlir", "sm_90", 2)
    instantiate(os.path.join(CORPUS, "many_kernels.nvvm.mlir"), path / "many.mlir", "sm_90", 3)
    instantiate(os.path.join(CORPUS, "multi_kernel.rocdl.mlir"), path / "amd.mlir", "gfx90a", 3)
    return path


def run_scons(path, *args, env=None):
    return subprocess.run([SCONS, "-Q", "-k", "DUMP=1", *args], cwd=path, capture_output=True, text=True,
                          env=env or os.environ)


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory):
    path = project(tmp_path_factory.mktemp("clean") / "p")
    run = run_scons(path)
    assert run.returncode == 0, run.stderr
    return path


@pytest.mark.parametrize("tool,kind", [("ptxas", "segfault"), ("ld.lld", "garbage"), ("mlir-translate", "hang"),
                                       ("ptxas", "partial")])
def test_scons_recovers_after_broken_tool(tool, kind, tmp_path, clean_build, served):
    path = project(tmp_path / "p")
    cuda, rocm, mlir = toolkits(tmp_path, tool, kind)
    env = dict(os.environ, MLIR_BIN=mlir, MLIRGPU_TOOL_TIMEOUT="3", **served)
    broken = run_scons(path, f"CUDA={cuda}", f"ROCM={rocm}", env=env)
    assert broken.returncode != 0 and tool in broken.stderr and "Traceback" not in broken.stderr
    fixed = run_scons(path, env=dict(os.environ, **served))
    assert fixed.returncode == 0, fixed.stderr
    names = files(clean_build)
    assert files(path) == names
    assert same_tree(clean_build, path, names) == []
    assert "up to date" in run_scons(path).stdout


def test_kill_9_mid_build_then_rebuild_is_clean(tmp_path, clean_build, served):
    path = project(tmp_path / "p")
    env = dict(os.environ, **served)
    process = subprocess.Popen([SCONS, "-Q", "-j2", "DUMP=1"], cwd=path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    time.sleep(2.0)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    run = run_scons(path, "-j2", env=env)
    assert run.returncode == 0, run.stderr
    names = files(clean_build)
    assert files(path) == names and same_tree(clean_build, path, names) == []


def _small_filesystem(path, size):
    """Mount a tmpfs of `size` at `path`; returns an undo function, or None where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                      capture_output=True).returncode != 0:
        return None

    def grow():
        subprocess.run(["mount", "-o", "remount,size=64m", str(path)], check=True)

    return grow


def test_full_disk_fails_cleanly_then_rebuild_is_clean(tmp_path, clean_build, served):
    disk = tmp_path / "disk"
    grow = _small_filesystem(disk, "160k")
    try:
        path = project(disk / "p")
        env = dict(os.environ, **served)
        if grow:
            full = run_scons(path, env=env)
        else:  # no mount permission: the same failure from a per-process file size limit
            limit = "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); " \
                    "resource.setrlimit(resource.RLIMIT_FSIZE, (40000, 40000)); sys.argv[0] = 'scons'; " \
                    "from SCons.Script import main; main()"
            full = subprocess.run([sys.executable, "-c", limit, "-Q", "-k", "DUMP=1"], cwd=path,
                                  capture_output=True, text=True, env=env)
        assert full.returncode != 0
        assert re.search(r"No space left on device|File too large", full.stderr), full.stderr
        assert "mlirgpu/" not in full.stderr  # no traceback from our code (SCons's own database may complain)
        if grow:
            grow()
        run = run_scons(path, env=env)
        assert run.returncode == 0, run.stderr
        names = files(clean_build)
        assert files(path) == names and same_tree(clean_build, path, names) == []
    finally:
        if grow:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)


ODD_NAMES = ['"dir/sub/kernels"', '"../../outside"', '"with space"', '"ünïcödé"', '"$(touch pwned)"',
             '"' + "long" * 80 + '"', '"-dash"']


def test_odd_module_names_stay_inside_the_dump_folder(tmp_path):
    modules = "\n".join(
        f'  gpu.module @{name} [#nvvm.target<chip = "sm_80">] {{\n'
        f'    llvm.func @k() attributes {{gpu.kernel, nvvm.kernel}} {{ llvm.return }}\n  }}'
        for name in ODD_NAMES)
    source = tmp_path / "odd.mlir"
    source.write_text("module attributes {gpu.container_module} {\n" + modules + "\n}\n")
    dumps = tmp_path / "deep" / "D"
    options = CompileOptions(format="isa", dump_dir=str(dumps))
    result = compile_file(str(source), options)
    assert sorted(os.listdir(tmp_path / "deep")) == ["D"]
    assert sorted(os.path.relpath(p, dumps) for p in result.dumps) == sorted(os.listdir(dumps))
    for name in os.listdir(dumps):
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_\-]*\.[a-z.]+", name) and len(name) < 160, name
    assert sorted(planned_outputs(str(source), options)) == sorted(os.listdir(dumps))
    for item in result.binaries:
        assert re.fullmatch(r"[A-Za-z_]\w*", item.symbol)
    assert not (tmp_path / "pwned").exists() and not os.path.exists("pwned")


def test_scratch_folders_are_private(tmp_path):
    """The serializer's temporary files live in a folder only the user can enter (checked by a fake ptxas)."""
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    os.symlink(os.path.join(cuda_toolkit(), "nvvm"), cuda / "nvvm")
    report = tmp_path / "mode.txt"
    spy = cuda / "bin" / "ptxas"
    spy.write_text(f'#!/bin/sh\nstat -c %a "$(dirname "$3")" > {report}\nexit 1\n')
    spy.chmod(0o755)
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o"), "--format",
                          "bin", "--toolkit", str(cuda)], capture_output=True, text=True, env=ENV)
    assert run.returncode == 1
    assert report.read_text().strip() == "700"


def test_two_checkouts_build_identical_files(tmp_path, clean_build):
    other = project(tmp_path / "somewhere" / "else" / "p")
    run = run_scons(other, "-j2")
    assert run.returncode == 0, run.stderr
    names = files(clean_build)
    assert files(other) == names and same_tree(clean_build, other, names) == []
    for name in names:
        data = (other / name).read_bytes()
        assert str(other).encode() not in data and str(tmp_path).encode() not in data, name


def test_a_file_size_limit_below_the_isa_is_one_line(tmp_path):
    """Under `ulimit -f` smaller than the ISA the serializer needs in its scratch folder, the compile fails with
    one line naming the cause and the fix (it was an internal error, OSError, at stage binary)."""
    import resource

    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, preexec_fn=limited,
                         env=dict(ENV, MLIRGPU_CACHE="off", MLIRGPU_SERVER="off"))
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert "File too large" in lines[0] and "ulimit -f" in lines[0] and "internal error" not in lines[0]


def test_a_working_folder_longer_than_the_systems_paths_is_one_line(tmp_path, served):
    """A folder entered step by step can have a path longer than PATH_MAX (4096 on Linux): every absolute path a
    compile makes from it would fail, in process (it was an internal error) and served (a line holding the whole
    path). One short line says so, both ways."""
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    step = "d" * 240
    script = f"cd {tmp_path} && " + " && ".join(f"mkdir {step} && cd {step}" for _ in range(18)) + \
             f" && cp {source} k.mlir && exec {sys.executable} -m mlirgpu compile k.mlir -o k.o"
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=dict(ENV, **served))
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr[:2000]
    assert "longer than this system's paths" in lines[0] and len(lines[0]) < 300, lines[0][:300]
