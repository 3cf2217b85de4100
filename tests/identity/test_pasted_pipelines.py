"""Upstream's pipelines as given: a RUN line's `mlir-opt` flags (or the same pipeline in pass-pipeline syntax)
handed to `--lowering` / `GPU_LOWERING` compile the file stage by stage, and the binaries and host LLVM IR are
byte-identical to what upstream's full RUN line produces (`mlir-opt FILE FLAGS | mlir-translate`).

The corpus (tests/corpus/pipelines) is written here in the style of MLIR's GPU integration tests: host code that
launches kernels, lowered by `gpu-lower-to-nvvm-pipeline` / `gpu-lower-to-xevm-pipeline` as their RUN lines say,
or by the pass lists of older NVVM and of ROCm tests (flags, one --pass-pipeline, chains of mlir-opt runs).
Each file compiles with upstream's RUN line (mlir-opt 22, no CUDA libdevice, no ROCm device libraries).
"""
import os
import re
import shlex
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT
from mlirgpu.llvm import toolchain
from oracle import decode
from runlines import mlir_opt_runs, run_line
from sconsutil import SCONS, TOOLPATH

PIPELINES = os.path.join(CORPUS, "pipelines")
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
_OBJECT = re.compile(r'#gpu\.object<(#\w+\.target(?:<[^>]*>)?)(?:, properties = \{[^}]*\})?, (?:(\w+) = )?'
                     r'"((?:[^"\\]|\\[0-9A-Fa-f]{2}|\\[\\"nt])*)"')


def upstream(path, flags, workdir):
    """(objects per module in order, host LLVM IR) of upstream's RUN line: mlir-opt with the flags, then
    mlir-translate (what mlir-runner would JIT)."""
    lowered = None
    for run in mlir_opt_runs(flags):
        lowered = subprocess.run([toolchain.llvm_tool("mlir-opt"), "-" if lowered else path, *run], capture_output=True,
                                 text=True, input=lowered.stdout if lowered else None)
        assert lowered.returncode == 0, lowered.stderr
    objects = {}
    for match in re.finditer(r"gpu\.binary @([\w$.]+)\s*(?:<[^\[]*>)?\s*\[(.*?)\]\s*$", lowered.stdout, re.M):
        objects[match.group(1)] = [decode(body) for _target, _kind, body in _OBJECT.findall(match.group(2))]
    host = subprocess.run([toolchain.llvm_tool("mlir-translate"), "--mlir-to-llvmir", "-"], input=lowered.stdout,
                          capture_output=True, text=True, cwd=workdir)
    assert host.returncode == 0, host.stderr
    return objects, host.stdout


def as_pass_pipeline(flags):
    """A RUN line's flags in pass-pipeline syntax: `-name="options"` as `name{options}`, nested in
    `gpu.module(...)`, `func.func(...)` where mlir-opt nests the flag (a pass anchored on that op, as it dumps it);
    `--pass-pipeline='builtin.module(X)'` as X; a chain of mlir-opt runs as one list."""
    passes = []
    for word in (word for run in mlir_opt_runs(flags) for word in run):
        name, _, value = word.lstrip("-").partition("=")
        if name == "pass-pipeline":
            passes.append(value[len("builtin.module("):-1])
            continue
        element = f"{name}{{{value}}}" if value else name
        dumped = subprocess.run([toolchain.llvm_tool("mlir-opt"), "-", "--dump-pass-pipeline", word, "-o", os.devnull],
                                input="module {}", capture_output=True, text=True).stderr
        nested = re.match(r"Pass Manager with 1 passes: builtin\.module\( (\w+\.[\w.]+)\(", " ".join(dumped.split()))
        if nested:
            anchor = nested.group(1) + "("
            if passes and passes[-1].startswith(anchor):
                element, passes = f"{passes[-1][len(anchor):-1]}, {element}", passes[:-1]
            element = f"{anchor}{element})"
        passes.append(element)
    return ", ".join(passes)


def ours(path, lowering_args, workdir):
    workdir.mkdir(exist_ok=True)
    dumps = workdir / "d"
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", path, "-o", str(workdir / "k.o"),
                          "--dump-intermediates", str(dumps), *lowering_args], capture_output=True, text=True,
                         env=ENV, cwd=workdir)
    assert run.returncode == 0, run.stderr
    return dumps


def binary_of(dumps, module, suffixes=(".fatbin", ".cubin", ".spv", ".hsaco", ".isa")):
    for suffix in suffixes:
        if (dumps / (module + suffix)).exists():
            return (dumps / (module + suffix)).read_bytes()
    raise AssertionError(f"no binary of {module} in {sorted(os.listdir(dumps))}")


CASES = sorted(name for name in os.listdir(PIPELINES) if name.endswith(".mlir"))


def _shape(name):
    """The pass flags a file's RUN line names, with the names of their options (a --pass-pipeline with its
    pipeline)."""
    words = shlex.split(run_line(os.path.join(PIPELINES, name)))
    return tuple(word if "pass-pipeline=" in word else
                 (word.lstrip("-").partition("=")[0], *re.findall(r"([\w-]+)=", word.partition("=")[2]))
                 for word in words)


# Every file as its RUN line is pasted; the other two spellings on the first file of each shape of RUN line (the
# spelling is read from the flags, not from the kernel), which keeps the file's run time to minutes on 2 cores.
RESPELLED = sorted({_shape(name): name for name in reversed(CASES)}.values())
SPELLINGS = [pytest.param(name, "run-line", id=f"{name}-run-line") for name in CASES] + [
    pytest.param(name, spelling, id=f"{name}-{spelling}") for name in RESPELLED
    for spelling in ("after-equals", "pass-pipeline")]


@pytest.mark.parametrize("name, spelling", SPELLINGS)
def test_a_pasted_pipeline_builds_what_upstreams_run_line_builds(name, spelling, tmp_path):
    path = os.path.join(PIPELINES, name)
    flags = run_line(path)
    args = {"run-line": ["--lowering", *shlex.split(flags)] if len(shlex.split(flags)) == 1 else ["--lowering", flags],
            "after-equals": [f"--lowering={flags}"],
            "pass-pipeline": ["--lowering", as_pass_pipeline(flags)]}[spelling]
    objects, host = upstream(path, flags, tmp_path)
    dumps = ours(path, args, tmp_path)
    assert objects, "upstream serialized nothing"
    for module, binaries in objects.items():
        assert len(binaries) == 1, f"{module}: the pipeline attaches one target"
        assert binary_of(dumps, module) == binaries[0], module
        assert not any(name.startswith(module + ".") and name.count(".") > 2 for name in os.listdir(dumps)), \
            sorted(os.listdir(dumps))  # one target: no per-chip dump names
    assert (dumps / "host.ll").read_text() == host


def test_the_pipelines_format_chip_and_level_are_taken_unless_the_build_sets_them(tmp_path):
    """two_launches' RUN line asks for sm_90, O3 and cubins: the compile's record says so; a build that sets
    the chip gets its own (and upstream's RUN line with that chip gives the same bytes)."""
    import json

    path = os.path.join(PIPELINES, "two_launches.mlir")
    flags = run_line(path)
    dumps = ours(path, ["--lowering", flags], tmp_path)
    record = json.loads((dumps / "mlirgpu.json").read_text())
    assert "sm_90" in json.dumps(record) and "cubin" in " ".join(os.listdir(dumps))
    assert not any(name.endswith(".fatbin") for name in os.listdir(dumps))
    other = tmp_path / "other"
    other.mkdir()
    dumps = ours(path, ["--lowering", flags, "--chip", "sm_80"], other)
    objects, _host = upstream(path, flags.replace("sm_90", "sm_80"), other)
    for module, binaries in objects.items():
        assert binary_of(dumps, module) == binaries[0]


def test_a_pass_list_stopped_before_serialization_gets_no_second_target(tmp_path):
    """The expanded pass list of upstream's pipeline, cut by hand before gpu-module-to-binary, already attached
    its target: the build's target is attached only to modules still without one, so each module compiles
    once, with the pipeline's chip and features."""
    path = os.path.join(PIPELINES, "all_reduce_and.mlir")
    flags = run_line(path)
    dumped = subprocess.run([toolchain.llvm_tool("mlir-opt"), "-", "--dump-pass-pipeline",
                             f"--pass-pipeline=builtin.module({as_pass_pipeline(flags)})", "-o", os.devnull],
                            input="module {}", capture_output=True, text=True).stderr
    body = dumped[dumped.index("builtin.module(") :]
    cut = " ".join(body[: body.index("gpu-module-to-binary")].split()).rstrip(",") + ")"  # on one line, as pasted
    for chip, build in (("sm_80", []), ("sm_90", ["--chip", "sm_90"])):  # the pipeline's chip, or the build's
        dumps = ours(path, ["--lowering", cut, "--target", "nvvm", *build], tmp_path / chip)
        names = sorted(os.listdir(dumps))
        assert [name for name in names if name.endswith(".isa")] == ["main_kernel.isa"], names
        assert f".target {chip}\n" in (dumps / "main_kernel.isa").read_text()


def test_a_file_that_could_be_cut_straight_from_its_text_still_runs_the_pipeline(tmp_path):
    """Modules in the LLVM dialect that carry their own target, and no host code, are cut straight from the text
    when the build lowers nothing; a user's pipeline runs on them as upstream's mlir-opt does: here its attach
    pass appends a second target, and both objects are upstream's bytes."""
    path = tmp_path / "k.mlir"
    path.write_text('module attributes {gpu.container_module} {\n'
                    '  gpu.module @k [#nvvm.target<O = 0, chip = "sm_80", features = "+ptx80">] {\n'
                    '    llvm.func @store(%p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {\n'
                    '      %v = llvm.mlir.constant(7 : i32) : i32\n'
                    '      llvm.store %v, %p : i32, !llvm.ptr\n'
                    '      llvm.return\n'
                    '    }\n'
                    '  }\n'
                    '}\n')
    flags = '-nvvm-attach-target="chip=sm_90 features=+ptx80" -gpu-module-to-binary="format=isa"'
    objects, _host = upstream(str(path), flags, tmp_path)
    dumps = ours(str(path), ["--lowering", flags], tmp_path / "ours")
    assert [binary_of(dumps, f"k.{chip}", (".isa",)) for chip in ("sm_80", "sm_90")] == objects["k"]


def test_scons_takes_a_run_lines_pipeline(tmp_path):
    path = os.path.join(PIPELINES, "all_reduce_and.mlir")
    flags = run_line(path)
    (tmp_path / "k.mlir").write_text(open(path, encoding="utf-8").read())
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}], GPU_LOWERING={flags!r})\n"
        "env.GpuObject('k', 'k.mlir')\n")
    run = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    objects, host = upstream(path, flags, tmp_path)
    assert (tmp_path / "k.dumps" / "main_kernel.fatbin").read_bytes() == objects["main_kernel"][0]
    assert (tmp_path / "k.dumps" / "host.ll").read_text() == host
    again = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert "up to date" in again.stdout, again.stdout + again.stderr


@pytest.mark.parametrize("text", [
    "-gpu-lower-to-nvvm-pipeline=cubin-chip=sm_80 -split-input-file",
    "gpu-lower-to-nvvm-pipelin{cubin-chip=sm_80}",
    "gpu-lower-to-nvvm-pipeline{cubin-chip=sm_80 cubin-format=offloading}",  # LLVM bitcode: not built
    "-gpu-lower-to-nvvm-pipeline='cubin-chip=sm_80 cubin-format=%gpu_compilation_format'"])  # upstream: invalid
def test_a_pipeline_mlir_opt_cannot_read_is_one_line_with_the_fix(text, tmp_path):
    path = os.path.join(PIPELINES, "all_reduce_and.mlir")
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", path, "-o", str(tmp_path / "k.o"),
                          f"--lowering={text}"], capture_output=True, text=True, env=ENV)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert lines[0].startswith(f"mlirgpu: {path}: error: ") and "(fix: " in lines[0], lines[0]
    assert not (tmp_path / "k.o").exists()


def test_a_run_line_compile_runs_mlir_opt_once(tmp_path):
    """A file the pipeline outlines (gpu.launch, no gpu.module) is read by the pipeline's own mlir-opt run, not
    normalised first, and the pipeline's expansion is a tool fact the command wrote before its worker compiled:
    the compile's profile counts one mlir-opt run (the pipeline up to serialization, then the host passes after
    it, in the same run), and its objects are upstream's bytes
    (test_a_pasted_pipeline_builds_what_upstreams_run_line_builds)."""
    import json

    path = os.path.join(PIPELINES, "all_reduce_add.mlir")
    assert "gpu.module" not in open(path, encoding="utf-8").read()
    profile = tmp_path / "profile.jsonl"
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", path, "-o", str(tmp_path / "k.o"),
                          "--lowering", run_line(path), "--dump-intermediates", str(tmp_path / "d")],
                         capture_output=True, text=True, cwd=tmp_path,
                         env=dict(ENV, MLIRGPU_PROFILE=str(profile), MLIRGPU_CACHE="off",
                                  XDG_CACHE_HOME=str(tmp_path / "user-cache")))
    assert run.returncode == 0, run.stderr
    tools = json.loads(profile.read_text().splitlines()[0])["tools"]
    assert [runs for name, (runs, _seconds) in tools.items() if name.startswith("mlir-opt")] == [1], tools


@pytest.mark.parametrize("name, binary_tools", [("all_reduce_add", {"ptxas": 1, "fatbinary": 1}),
                                                ("all_reduce_min", {"ptxas": 1})])  # a gpu.module written in it
def test_the_trace_counts_a_run_line_compiles_tool_processes(name, binary_tools, tmp_path):
    """`--trace`: the compile's event says how many tool processes it ran, per program: for a RUN line's NVVM
    file with host code one mlir-opt (lowering and host passes; a gpu.module written in the file is read by the
    scan, not by a normalising run), one mlir-translate (the device modules and the host code with placeholder
    binaries, patched after: mlirgpu.pipeline.hostplaceholder), and ptxas (and fatbinary for a fatbin);
    upstream's chain runs mlir-opt (which runs ptxas and fatbinary), mlir-translate and llc."""
    import json

    path = os.path.join(PIPELINES, name + ".mlir")
    trace = tmp_path / "trace.json"
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", path, "-o", str(tmp_path / "k.o"),
                          "--lowering", run_line(path), "--dump-intermediates", str(tmp_path / "d"),
                          "--trace", str(trace)], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(ENV, MLIRGPU_CACHE="off", XDG_CACHE_HOME=str(tmp_path / "user-cache")))
    assert run.returncode == 0, run.stderr
    [event] = [event for event in json.loads(trace.read_text())["traceEvents"] if event.get("cat") == "compile"]
    tools = {re.sub(r"-\d+$", "", name): runs for name, runs in event["args"]["tools"].items()}  # mlir-opt-22
    assert tools == {"mlir-opt": 1, "mlir-translate": 1, **binary_tools}, event["args"]
    assert event["args"]["processes"] == 2 + len(binary_tools)
