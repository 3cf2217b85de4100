"""The native `mlirgpu` launcher (launcher.c): a command a running compile server serves gives the same outputs,
messages and exit codes as through the Python client, without starting Python; everything else (other commands,
help, the server off or absent, a stale or missing card, text the request cannot carry) becomes the Python client
with the same arguments, before anything ran."""
import os
import stat
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu.server import launcher


@pytest.fixture
def served(tmp_path):
    """A compile server of its own (folder, cache) and the environment naming it; stopped after the test."""
    folder = tmp_path / "server"
    folder.mkdir(mode=0o700)
    env = dict(os.environ, MLIRGPU_SERVER_DIR=str(folder), MLIRGPU_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.path.join(ROOT, "site_scons"), MLIRGPU_SERVER="on")
    started = subprocess.run([sys.executable, "-m", "mlirgpu", "server", "start"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    yield env
    subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=env, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The launcher (becoming this Python) and a probe of it whose Python only records that it was asked."""
    folder = tmp_path_factory.mktemp("launcher")
    real, probe, python = folder / "mlirgpu", folder / "probe", folder / "python"
    python.write_text('#!/bin/sh\nprintf "%s\\n" "$*" >> "$PROBE_LOG"\nexit 99\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    assert launcher.build(str(real)) is None
    assert launcher.build(str(probe), python=str(python)) is None
    return real, probe


def _run(program, args, env, cwd, **extra):
    return subprocess.run([str(program), *args], env=dict(env, **extra), cwd=cwd, capture_output=True, timeout=120)


def _served_commands(env):
    status = subprocess.run([sys.executable, "-m", "mlirgpu", "server", "status"], env=env, capture_output=True,
                            text=True, timeout=60).stdout
    return int(status.split("served ")[1].split()[0])


def _outputs(folder):
    return {os.path.relpath(os.path.join(d, n), folder): open(os.path.join(d, n), "rb").read()
            for d, _s, names in os.walk(folder) for n in names}


def test_served_commands_equal_the_python_clients(tmp_path, served, built, cuda_root):
    """compile (with every output), a compile error and list-outputs: byte-equal outputs, stdout, stderr and exit
    codes (stage cache off: both compile); the probe's Python is never asked, and the server served every command."""
    _real, probe = built
    for name in ("python", "native"):
        work = tmp_path / name
        work.mkdir()
        source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), work / "k.mlir", "", 3)
        (work / "bad.mlir").write_text(open(source).read().replace("llvm.return", "llvm.frobnicate", 1))
    log = tmp_path / "probe.log"
    commands = [
        ["compile", "k.mlir", "-o", "out/k.o", "--header", "out/k.h", "--depfile", "out/k.d", "--dump-intermediates",
         "out/dumps", "--toolkit", cuda_root],
        ["compile", "bad.mlir", "-o", "out/bad.o"],
        ["list-outputs", "k.mlir", "-o", "out/k.o", "--dump-intermediates", "out/dumps"],
    ]
    before = _served_commands(served)
    for args in commands:
        results = {}
        for name, program in (("python", [sys.executable, "-m", "mlirgpu"]), ("native", [str(probe)])):
            work = tmp_path / name
            run = subprocess.run([*program, *args], env=dict(served, PROBE_LOG=str(log), MLIRGPU_CACHE="off"), cwd=work,
                                 capture_output=True, timeout=120)
            results[name] = (run.returncode, run.stdout, run.stderr, _outputs(work / "out") if (work / "out").exists()
                             else {})
        assert results["native"] == results["python"], args
    assert not log.exists(), log.read_text()
    assert results["native"][0] == 0 and results["native"][1]  # list-outputs printed the names
    assert _served_commands(served) - before == 2 * len(commands)


@pytest.mark.parametrize("case", ["help", "other command", "server off", "no card", "stale card", "no server",
                                  "non-ASCII argument", "non-ASCII environment", "no command"])
def test_the_rest_becomes_the_python_client(tmp_path, served, built, case):
    """Each case runs the probe's Python with exactly the arguments given (after `-P -c CODE`), before any
    request: the probe exits 99 and logs its arguments."""
    _real, probe = built
    log = tmp_path / "probe.log"
    source = tmp_path / "k.mlir"
    source.write_text("module {}\n")
    args = {"help": ["compile", "--help"], "other command": ["cache", "stats"],
            "non-ASCII argument": ["compile", "k.mlir", "-o", "k\u00e9.o"], "no command": []
            }.get(case, ["compile", "k.mlir", "-o", "k.o"])
    env = dict(served, PROBE_LOG=str(log))
    card = launcher.card_path(served["MLIRGPU_SERVER_DIR"])
    if case == "server off":
        env["MLIRGPU_SERVER"] = " Off "
    elif case == "no card":
        os.unlink(card)
    elif case == "stale card":
        text = open(card).read().splitlines()
        line = next(index for index, entry in enumerate(text) if entry.startswith("P "))
        size = text[line].split()[1]
        text[line] = text[line].replace(f"P {size} ", f"P {int(size) + 1} ", 1)
        open(card, "w").write("\n".join(text) + "\n")
    elif case == "no server":
        subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=served, capture_output=True,
                       timeout=60)
    elif case == "non-ASCII environment":
        env["SOME_NAME"] = "caf\u00e9"
    before = _served_commands(served) if case != "no server" else None
    run = _run(probe, args, env, tmp_path)
    assert run.returncode == 99, (run.stdout, run.stderr)
    logged = log.read_text().splitlines()
    assert len(logged) == 1 and logged[0].startswith("-P -c import sys; from mlirgpu.server.client import main")
    assert logged[0].endswith(" ".join(args)) if args else logged[0].endswith("sys.exit(main())")
    if before is not None:
        assert _served_commands(served) == before  # (status itself is no command)


def test_a_real_launcher_falls_back_to_a_working_python_client(tmp_path, built, cuda_root):
    """Without a server, the launcher becomes the Python client, which starts one and compiles; the next command
    is served by the launcher itself: both equal a compile in process."""
    real, _probe = built
    folder = tmp_path / "server"
    folder.mkdir(mode=0o700)
    env = dict(os.environ, MLIRGPU_SERVER_DIR=str(folder), MLIRGPU_CACHE_DIR=str(tmp_path / "cache"),
               MLIRGPU_SERVER="on")
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    try:
        outputs = []
        for run_name in ("first", "second", "in process"):
            extra = {"MLIRGPU_SERVER": "off"} if run_name == "in process" else {}
            run = _run(real, ["compile", source, "-o", f"{run_name}.o", "--format", "bin"], env, tmp_path, **extra)
            assert run.returncode == 0 and run.stderr == b"", run.stderr
            outputs.append((tmp_path / f"{run_name}.o").read_bytes())
        assert outputs[0] == outputs[1] == outputs[2]
        assert _served_commands(dict(env, PYTHONPATH=os.path.join(ROOT, "site_scons"))) == 2
    finally:
        subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=env, capture_output=True, timeout=60)
