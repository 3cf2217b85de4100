"""The environment, read one way (mlirgpu.util.environment), on the paths users take: `mlirgpu compile` in
process and through the compile server (and its native launcher), a real SCons build, and the remote cache
against a real redis-server. A boolean means what its word says (`MLIRGPU_STATS=off` is off), a value a
variable's kind does not take is one error line naming it, and no module reads an MLIRGPU_* variable itself."""
import glob
import os
import re
import subprocess
import sys

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from sconsutil import SCONS, TOOLPATH

PACKAGE = os.path.join(ROOT, "site_scons", "mlirgpu")
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
COMMAND = os.path.join(os.path.dirname(sys.executable), "mlirgpu")  # the installed command (a native launcher)
STATS_LINE = re.compile(r"^mlirgpu: .*stage cache: \d+ of \d+ stages cached", re.M)
BOOLEAN_WORDS = "is not one of 1/0, on/off, true/false, yes/no"


def _source(folder):
    return instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), folder / "k.mlir", "gfx942", 3)


def _compile(folder, command=(sys.executable, "-m", "mlirgpu"), **env):
    return subprocess.run([*command, "compile", "k.mlir", "-o", "k.o"], cwd=folder, capture_output=True, text=True,
                          timeout=300, env=dict(ENV, **env))


def _one_error(run, start):
    """One line: `mlirgpu: [k.mlir: ]error: START...` (the options check names the source it was checking)."""
    assert run.returncode == 1 and re.match(r"mlirgpu: (k\.mlir: )?error: " + re.escape(start), run.stderr), \
        run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr


@pytest.mark.parametrize("value, shown", [("off", False), ("no", False), ("False", False), ("", False),
                                          ("on", True), ("YES", True)])
def test_stats_words_mean_what_they_say(tmp_path, served, value, shown):
    """`MLIRGPU_STATS=off` (or no, false, any case; empty: the default) prints no statistics; on, yes do."""
    _source(tmp_path)
    run = _compile(tmp_path, MLIRGPU_STATS=value, **served)
    assert run.returncode == 0, run.stderr
    assert bool(STATS_LINE.search(run.stderr)) == shown, run.stderr


@pytest.mark.parametrize("name, value, words", [
    ("MLIRGPU_STATS", "maybe", BOOLEAN_WORDS),
    ("MLIRGPU_DEBUG", "verbose", BOOLEAN_WORDS),
    ("MLIRGPU_CACHE", "sometimes", BOOLEAN_WORDS),
    ("MLIRGPU_COMPILE_PROCESSES", "many", "is not a number of processes from 1 to 1024"),
    ("MLIRGPU_TOOL_TIMEOUT", "1_000", "is not a number of seconds from 1 to 604800"),
])
def test_a_value_its_kind_does_not_take_is_one_error_line(tmp_path, served, name, value, words):
    """The error names the variable, the value and what it takes, and nothing is written."""
    _source(tmp_path)
    run = _compile(tmp_path, **{name: value}, **served)
    _one_error(run, f"{name}='{value}' {words} (fix: set it to ")
    assert not (tmp_path / "k.o").exists()


@pytest.fixture
def server(tmp_path):
    """A running compile server of this test's own (its environment), stopped at the end."""
    folder = tmp_path / "srv"
    folder.mkdir(mode=0o700)
    env = {"MLIRGPU_SERVER": "on", "MLIRGPU_SERVER_DIR": str(folder), "MLIRGPU_SERVER_IDLE": "60"}
    start = subprocess.run([sys.executable, "-m", "mlirgpu", "server", "start"], capture_output=True, text=True,
                           timeout=120, env=dict(ENV, **env))
    assert start.returncode == 0, start.stderr
    yield env
    subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], capture_output=True, timeout=60,
                   env=dict(ENV, **env))


@pytest.mark.parametrize("name, value, words", [
    ("MLIRGPU_SERVER", "maybe", BOOLEAN_WORDS),
    ("MLIRGPU_SERVER_TIMEOUT", "soon", "is not a number of seconds from 0"),
])
def test_a_bad_server_setting_is_one_error_line_with_a_server_running(tmp_path, server, name, value, words):
    """The installed command (the native launcher where tools/bootstrap built one) and the Python client alike:
    a running server does not take a command whose server settings mean nothing."""
    _source(tmp_path)
    for command in ([COMMAND], [sys.executable, "-m", "mlirgpu"]):
        run = _compile(tmp_path, command, **dict(server, **{name: value}))
        _one_error(run, f"{name}='{value}' {words}")
        assert not (tmp_path / "k.o").exists()


def test_a_bad_idle_time_is_said_by_the_command_that_would_start_the_server(tmp_path):
    """MLIRGPU_SERVER_IDLE is read by the server; a bad one is said by the client before it starts one (not a
    server that dies in its log while the command compiles in process without a word)."""
    _source(tmp_path)
    folder = tmp_path / "srv"
    folder.mkdir(mode=0o700)
    run = _compile(tmp_path, MLIRGPU_SERVER="on", MLIRGPU_SERVER_DIR=str(folder), MLIRGPU_SERVER_IDLE="a while")
    _one_error(run, "MLIRGPU_SERVER_IDLE='a while' is not a number of seconds from 0")
    assert not (tmp_path / "k.o").exists() and not glob.glob(str(folder / "*.sock"))


SCONSTRUCT = """\
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}])
env.GpuObject("k", "k.mlir")
"""


def _scons(folder, *args, **env):
    return subprocess.run([SCONS, "-Q", *args], cwd=folder, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env))


def test_scons_reads_the_same_words(tmp_path):
    """Under SCons, MLIRGPU_STATS=off prints no statistics at the build's end and on does; a bad value stops
    the build when the tool is set up, in one line naming it (no traceback, nothing built)."""
    (tmp_path / "SConstruct").write_text(SCONSTRUCT.format(toolpath=TOOLPATH))
    _source(tmp_path)
    bad = _scons(tmp_path, MLIRGPU_STATS="maybe")
    errors = [line for line in bad.stderr.splitlines() if line.startswith("scons: *** ")]
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and not (tmp_path / "k.o").exists(), bad.stderr
    assert len(errors) == 1 and errors[0].startswith(f"scons: *** error: MLIRGPU_STATS='maybe' {BOOLEAN_WORDS}"), \
        bad.stderr
    off = _scons(tmp_path, MLIRGPU_STATS="off")
    assert off.returncode == 0 and (tmp_path / "k.o").exists(), off.stderr
    assert not STATS_LINE.search(off.stderr), off.stderr
    _scons(tmp_path, "-c")
    on = _scons(tmp_path, MLIRGPU_STATS="on")
    assert on.returncode == 0 and STATS_LINE.search(on.stderr), on.stderr


@pytest.mark.needs("redis-server", "tools/bootstrap test installs it (Debian package redis-server)")
def test_an_empty_remote_cache_secret_is_refused(tmp_path):
    """MLIRGPU_REMOTE_CACHE_SECRET set but empty (a CI secret the job may not read) is an error, not a cache
    shared without a secret: nothing is compiled or stored. Unset, the same compile stores its stages."""
    from redis_server import Redis

    server = Redis(tmp_path)
    try:
        _source(tmp_path)
        settings = {"MLIRGPU_REMOTE_CACHE": server.url(), "MLIRGPU_CACHE_DIR": str(tmp_path / "cache")}
        run = _compile(tmp_path, MLIRGPU_REMOTE_CACHE_SECRET="", **settings)
        _one_error(run, "MLIRGPU_REMOTE_CACHE_SECRET is set but empty (fix: set it to a secret, or unset it for "
                        "no secret)")
        assert not (tmp_path / "k.o").exists() and server.client.dbsize() == 0
        run = _compile(tmp_path, **settings)
        assert run.returncode == 0 and server.client.dbsize() > 0, run.stderr
    finally:
        server.stop()


def test_no_module_reads_an_mlirgpu_variable_itself():
    """Every read of the environment in the package names a variable that is not ours (PATH, CC, XDG_*, the
    toolkit search variables by `name`); MLIRGPU_* ones go through mlirgpu.util.environment's table."""
    read = re.compile(r"environ(?:ment)?\)?(?:\.get\(\s*([^,)]+)|\[\s*([^\]]+)\](?!\s*=[^=]))")
    foreign = {'"PYTHONPATH"', '"CC"', '"XDG_CACHE_HOME"', '"XDG_RUNTIME_DIR"', "name", '"PATH"'}
    found = []
    for path in glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True):
        if path.endswith(os.path.join("util", "environment.py")):
            continue
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                found += [f"{os.path.relpath(path, PACKAGE)}:{number}: {key}" for match in read.finditer(line)
                          for key in match.groups() if key and key.strip() not in foreign]
    assert found == []
