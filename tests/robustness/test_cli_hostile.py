"""Hostile ways of running the `mlirgpu` command in process (MLIRGPU_SERVER=off), as a user or build tool does:
its output piped into a reader that goes away, Ctrl-C in the middle of a compile, a command line of 60,000
options, file inputs too large to read whole, and a source whose name is not UTF-8."""
import os
import signal
import subprocess
import sys
import time

import pytest

from corpusutil import ROOT
from hostile_cases import kernel

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), MLIRGPU_SERVER="off")


def _mlirgpu(*args, env=None, **popen):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], env=dict(ENV, **(env or {})), **popen)


def _closed_pipe():
    """The writing end of a pipe whose reader is gone (`| head` once head has exited)."""
    reader, writer = os.pipe()
    os.close(reader)
    return writer


def _files(folder):
    return sorted(os.path.relpath(os.path.join(d, n), folder) for d, _s, names in os.walk(folder) for n in names)


@pytest.mark.parametrize("command", ["list-outputs", "cache stats", "cache clear"])
def test_closed_stdout_ends_quietly_with_141(command, tmp_path):
    """`mlirgpu list-outputs ... | head` and the like: no message, the status of a filter SIGPIPE ended."""
    (tmp_path / "k.mlir").write_text(kernel())
    args = command.split()
    if args[0] == "list-outputs":
        args += ["k.mlir", "-o", "k.o", "--dump-intermediates", "D"]
    stdout = _closed_pipe()
    try:
        run = _mlirgpu(*args, stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120,
                       env={"MLIRGPU_CACHE_DIR": str(tmp_path / "cache")})
    finally:
        os.close(stdout)
    assert (run.returncode, run.stderr) == (128 + signal.SIGPIPE, "")


def test_compile_with_closed_stderr_ends_quietly_and_leaves_no_output(tmp_path):
    """A compile whose stderr reader is gone before it says its timings: 141, and its outputs removed (the next
    build compiles again, and shows what this one could not say)."""
    (tmp_path / "k.mlir").write_text(kernel())
    stderr = _closed_pipe()
    try:
        run = _mlirgpu("compile", "k.mlir", "-o", "k.o", "--header", "k.h", "--timings", stdout=subprocess.PIPE,
                       stderr=stderr, text=True, cwd=tmp_path, timeout=120)
    finally:
        os.close(stderr)
    assert (run.returncode, run.stdout) == (128 + signal.SIGPIPE, "")
    assert _files(tmp_path) == ["k.mlir"]


def _many_modules(count):
    module = """\
  gpu.module @m{i} [#nvvm.target<chip = "sm_80">] {{
    llvm.func @k(%x: f32, %p: !llvm.ptr<1>) attributes {{gpu.kernel, nvvm.kernel}} {{
      llvm.store %x, %p : f32, !llvm.ptr<1>
      llvm.return
    }}
  }}
"""
    return "module attributes {gpu.container_module} {\n" + "".join(module.format(i=i) for i in range(count)) + "}\n"


@pytest.mark.parametrize("whom", ["process", "group"])
def test_ctrl_c_ends_a_compile_with_one_line_and_130(whom, tmp_path):
    """SIGINT to the command alone (a build tool's) or to its process group (Ctrl-C in a terminal) once it has
    started a compile of some seconds: one line, status 130, and neither a stale nor a new object or header
    (nor a temporary file) then or a moment later, when a worker left running would have written them."""
    (tmp_path / "many.mlir").write_text(_many_modules(2000))
    for stale in ("many.o", "many.h"):
        (tmp_path / stale).write_text("from an earlier build")
    # Started as a terminal starts a foreground job: with SIGINT's default action, even where the test runner was
    # started in the background (a shell's `&` ignores SIGINT, and the command would inherit that).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen([sys.executable, "-m", "mlirgpu", "compile", "many.mlir", "-o", "many.o", "--format",
                                    "isa", "--header", "many.h", "--dump-intermediates", "D"], cwd=tmp_path,
                                   env=dict(ENV, MLIRGPU_CACHE="off"), stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    time.sleep(2.5)  # a compile of 2000 modules takes several times that
    (os.killpg if whom == "group" else os.kill)(process.pid, signal.SIGINT)
    _out, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr) == (128 + signal.SIGINT, "mlirgpu: interrupted\n")
    time.sleep(1)
    left = _files(tmp_path)
    assert "many.o" not in left and "many.h" not in left, left
    assert not [name for name in left if ".mlirgpu-tmp-" in name], left


def test_60000_libraries_parse_in_linear_time(tmp_path):
    """60,000 `-l` options (a generated list): read in well under 10 s, in order (argparse alone takes minutes:
    it looks through every option at each one). The link names the first, missing, library."""
    (tmp_path / "k.mlir").write_text(kernel())
    libraries = [word for i in range(60000) for word in ("-l", f"missing{i}.bc")]
    started = time.monotonic()
    run = _mlirgpu("compile", "k.mlir", "-o", "k.o", *libraries, capture_output=True, text=True, cwd=tmp_path,
                   env={"MLIRGPU_CACHE": "off"}, timeout=60)
    elapsed = time.monotonic() - started
    assert run.returncode == 1 and "bitcode library 'missing0.bc' does not exist" in run.stderr, run.stderr
    assert elapsed < 10, f"{elapsed:.1f} s"


def test_60000_options_of_every_kind_parse_in_linear_time(tmp_path):
    """60,000 repeated options that are not -l (a build system's flags given again per file): read in well under
    10 s, the last of each winning as argparse has it (the chip of the last --chip is the one compiled)."""
    (tmp_path / "k.mlir").write_text(kernel())
    words = [word for i in range(20000) for word in ("--chip", "sm_70", "--format=isa", "-O", str(i % 4))]
    started = time.monotonic()
    run = _mlirgpu("list-outputs", "k.mlir", "-o", "k.o", "--target", "nvvm", *words, "--chip=sm_90",
                   "--dump-intermediates", "D", capture_output=True, text=True, cwd=tmp_path, timeout=120)
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert "D/mlirgpu.json" in run.stdout.splitlines() and not [n for n in run.stdout.split() if "cubin" in n]
    assert elapsed < 10, f"{elapsed:.1f} s"


OPTION_WORDS = [["--chip", "sm_80"], ["--chip=sm_90"], ["-O", "2"], ["-O3"], ["-O=1"], ["-l", "a.bc"], ["-lb.bc"],
                ["-l=c.bc"], ["--format", "isa"], ["--format=bin"], ["--format", "nope"], ["-v"], ["--timings"],
                ["--features=-ptx80"], ["--features", "-ptx80"], ["--", "x"], ["--chi", "sm_75"], ["-vlx.bc"],
                ["--caller", "cmake"], ["-o", "other.o"], ["-ofile.o"], ["--target", "rocdl"], ["extra"], ["-"],
                ["--opts", "-v"], ["--opts=-v --x"], ["--timings=1"], ["-l"]]


@pytest.mark.parametrize("seed", range(40))
def test_a_long_command_line_reads_as_argparse_reads_it(seed, monkeypatch):
    """The one-pass reading (frontends/longargv) of random long command lines, against argparse's own: the same
    options or the same error (forced on for short lines here)."""
    import random
    sys.path.insert(0, os.path.join(ROOT, "site_scons"))
    from mlirgpu.frontends import cli, longargv

    rng = random.Random(seed)
    argv = [rng.choice(["compile", "list-outputs"]), "k.mlir", "-o", "k.o"]
    for _ in range(rng.randrange(1, 30)):
        argv += rng.choice(OPTION_WORDS if seed % 2 else OPTION_WORDS[:10])

    def read(collapse_from):
        monkeypatch.setattr(longargv, "COLLAPSE_FROM", collapse_from)
        try:
            return vars(cli._parse(argv))
        except SystemExit as exit_:
            return ("exit", exit_.code)

    assert read(0) == read(10 ** 9)


def _sparse(path, size):
    with open(path, "wb") as handle:
        handle.truncate(size)
    return str(path)


def test_huge_library_is_refused_without_reading_it(tmp_path):
    """A 2 GiB `-l` file (sparse: cheap to make) is refused before it is read (which took 6 GiB of memory): the
    error names it, its size and the limit."""
    (tmp_path / "k.mlir").write_text(kernel())
    huge = _sparse(tmp_path / "huge.bc", 2 << 30)
    (tmp_path / "k.o").write_text("stale")
    run = _mlirgpu("compile", "k.mlir", "-o", "k.o", "-l", huge, capture_output=True, text=True, cwd=tmp_path,
                   timeout=120)
    lines = run.stderr.splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert lines[0].startswith("mlirgpu: k.mlir: error: ") and huge in lines[0], lines[0]
    assert f"{2 << 30} bytes" in lines[0] and "(256 MiB)" in lines[0], lines[0]
    assert not (tmp_path / "k.o").exists()


@pytest.mark.parametrize("role", ["record", "baseline"])
def test_huge_record_or_baseline_is_refused(role, tmp_path):
    """`mlirgpu artifacts` reads records and a baseline manifest whole: one over the limit is an error naming it,
    its size and the limit."""
    (tmp_path / "k.mlir").write_text(kernel())
    assert _mlirgpu("compile", "k.mlir", "-o", "k.o", "--format", "isa", "--dump-intermediates", "D", cwd=tmp_path,
                    timeout=120).returncode == 0
    huge = _sparse(tmp_path / "huge.json", 100 << 20)
    args = [huge] if role == "record" else ["D", "--baseline", huge]
    run = _mlirgpu("artifacts", *args, "-o", "A", capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and run.stderr.startswith(f"mlirgpu: {huge}: error: file of {100 << 20} bytes "
                                                         "is larger than a build record or manifest may be (64 MiB)"), \
        run.stderr


def test_source_name_that_is_not_utf8_compiles(tmp_path):
    """A build system passes file names as bytes: a source, object, header, depfile and dump folder whose names
    hold bytes that are not UTF-8 compile; each file names them as they are on disk (the depfile and
    list-outputs as those bytes, the header's comment as `\\xNN`, the record as a name that reads back to them),
    also where stdout's encoding is strict UTF-8."""
    import json

    def name(raw):
        return os.fsdecode(raw)

    (tmp_path / name(b"k\xff.mlir")).write_text(kernel())
    args = [name(b"k\xff.mlir"), "-o", name(b"k\xff.o"), "--format", "isa", "--header", name(b"k\xff.h"),
            "--depfile", name(b"k\xff.d"), "--dump-intermediates", name(b"D\xfe")]
    strict = {"PYTHONIOENCODING": "utf-8:strict"}
    run = _mlirgpu("compile", *args, capture_output=True, cwd=tmp_path, timeout=120, env=strict)
    assert (run.returncode, run.stderr) == (0, b""), run.stderr
    assert (tmp_path / name(b"k\xff.h")).read_bytes().startswith(b"/* Generated by mlirgpu from k\\xff.mlir: ")
    subprocess.run(["gcc", "-Wall", "-Werror", "-fsyntax-only", "-x", "c", name(b"k\xff.h")], cwd=tmp_path,
                   check=True)
    assert (tmp_path / name(b"k\xff.d")).read_bytes().startswith(b"k\xff.o: k\xff.mlir")
    record = json.loads((tmp_path / name(b"D\xfe") / "mlirgpu.json").read_text())
    assert os.fsencode(record["source"]) == b"k\xff.mlir"
    assert b"k\xff.mlir" in (tmp_path / name(b"k\xff.o")).read_bytes()  # the object's registry names its source
    listed = _mlirgpu("list-outputs", *args, capture_output=True, cwd=tmp_path, timeout=120, env=strict)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[:3] == [b"k\xff.o", b"k\xff.h", b"D\xfe/m.initial.ll"]
    assert _mlirgpu("artifacts", name(b"D\xfe"), "-o", "A", cwd=tmp_path, timeout=120, env=strict).returncode == 0


def test_error_names_a_file_that_is_not_utf8_as_its_bytes(tmp_path):
    (tmp_path / os.fsdecode(b"k\xfe.mlir")).write_text("garbage\n")
    run = _mlirgpu("compile", os.fsdecode(b"k\xfe.mlir"), "-o", "k.o", capture_output=True, cwd=tmp_path,
                   timeout=120, env={"PYTHONIOENCODING": "utf-8:strict"})
    assert run.returncode == 1 and run.stderr.startswith(b"mlirgpu: k\\xfe.mlir:1: error: "), run.stderr
