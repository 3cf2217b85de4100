"""The compile server's requests and its clients' streams, on the real server, Python client and native launcher:
a malformed request is answered with an error and the server serves on; a request of any size up to the limit
(an environment of 10,000 variables) is served; a stopped server holds none of the streams of a client that gave
up on it; a client in a pid namespace of its own that sees the same files is served; a reader that closes a
served command's stdout ends it as SIGPIPE ends a Unix filter (status 141, no message)."""
import glob
import json
import os
import resource
import signal
import socket
import struct
import subprocess
import sys

import pytest

from mlirgpu.execution import rendezvous
from mlirgpu.llvm import process
from mlirgpu.server import launcher
from test_server_limits import _ends_within, _holders, _on_a_pipe
from test_server_trust import _unshare, served  # noqa: F401 - the fixture
from test_service import mlirgpu, status


@pytest.fixture(scope="module")
def launchers(tmp_path_factory):
    """The native launcher (becoming this Python), and a probe of it whose Python fails (99): a probe's command
    that exits otherwise was served by the launcher itself."""
    folder = tmp_path_factory.mktemp("launcher")
    python = folder / "python"
    python.write_text("#!/bin/sh\nexit 99\n")
    python.chmod(0o755)
    assert launcher.build(str(folder / "real")) is None
    assert launcher.build(str(folder / "probe"), python=str(python)) is None
    return {"native": str(folder / "real"), "probe": str(folder / "probe")}


def _socket_of(env):
    (path,) = glob.glob(os.path.join(env["MLIRGPU_SERVER_DIR"], "*.sock"))
    return path


def _ask(path, data, fds=()):
    """The server's answer to the message `data` (with descriptors `fds`) on a connection of its own."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
        connection.settimeout(10)
        connection.connect(path)
        connection.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
                           if fds else [])
        answer = connection.recv(1 << 16)
    return json.loads(answer) if answer else None


def test_malformed_requests_are_answered_and_the_server_serves_on(tmp_path, served):
    """Requests no client sends (no or another fingerprint's type, fields missing or of other types, text no
    process can take, truncated or no JSON), with the streams and without: each is answered with an error by the
    same server, which then serves a compile."""
    env, source = served
    assert mlirgpu("compile", source, "-o", str(tmp_path / "first.o"), env=env).returncode == 0
    pid, (served_before, _builds, _refused) = status(env)
    path = _socket_of(env)
    limits = {name: list(resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))) for name in process.LIMITS}
    good = {"kind": "run", "fingerprint": rendezvous.fingerprint(), "argv": ["list-outputs", source, "-o", "k.o"],
            "cwd": str(tmp_path), "env": {"PATH": os.environ["PATH"]}, "umask": 0o22, "limits": limits}
    requests = [{key: value for key, value in good.items() if key != "fingerprint"}, dict(good, fingerprint=7),
                dict(good, fingerprint=None), {key: value for key, value in good.items() if key != "cwd"},
                dict(good, cwd=3), dict(good, argv="list-outputs"), dict(good, argv=["list-outputs", 3]),
                dict(good, env=["PATH"]), dict(good, env={"PATH": 1}), dict(good, umask="022"),
                dict(good, cwd=str(tmp_path) + "\0x"), dict(good, env={"A": "b\0c"}), dict(good, env={"A=B": "c"}),
                dict(good, argv=["list-outputs", "a\0b"]), dict(good, limits={"FSIZE": "none"}),
                dict(good, kind=["run"]), {"kind": "zygote"}, {"kind": "zygote", "fingerprint": []}]
    frames = [json.dumps(request).encode() for request in requests]
    frames += [json.dumps(good).encode()[:60], b"\xff\xfe not JSON", b"[1, 2]", b'"run"', b"",
               b'{"attached": 10, "kind": "run"}', b'{"attached": ' + b"[" * 100000]
    for data in frames:
        for fds in ((), (0, 1, 2)):
            answer = _ask(path, data, fds)
            assert answer and answer.get("kind") == "error", (data[:80], fds, answer)
            assert _ask(path, b'{"kind": "status"}')["pid"] == pid, (data[:80], fds)
    run = mlirgpu("compile", source, "-o", str(tmp_path / "after.o"), env=env)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert status(env)[0] == pid and status(env)[1][0] == served_before + 1


@pytest.mark.parametrize("client", ["python", "probe"])
def test_a_large_environment_is_served(client, tmp_path, served, launchers):
    """10,000 variables, 320 KB of the request (a third of the 1 MiB a request may take, more than a socket's
    message carries): served by the server, through the Python client and by the native launcher itself, with
    the outputs of a compile in process."""
    env, source = served
    assert mlirgpu("server", "start", env=env).returncode == 0
    env.update({f"BIG_{index:05d}": "v" * 17 for index in range(10000)})
    assert 300_000 < len(json.dumps({name: env[name] for name in env if name.startswith("BIG_")})) < 1 << 20
    program = [sys.executable, "-m", "mlirgpu"] if client == "python" else [launchers[client]]
    reference = mlirgpu("compile", source, "-o", str(tmp_path / "reference.o"), env=dict(env, MLIRGPU_SERVER="off"))
    assert reference.returncode == 0
    run = subprocess.run([*program, "compile", source, "-o", str(tmp_path / "served.o")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert (tmp_path / "served.o").read_bytes() == (tmp_path / "reference.o").read_bytes()
    assert status(env)[1][0] == 1


@pytest.mark.parametrize("client", ["python", "native"])
def test_a_stopped_server_holds_no_stream_of_a_client_that_gave_up(client, tmp_path, served, launchers):
    """`mlirgpu compile ... 2>&1 | cat` while the server is stopped (SIGSTOP): the client gives up on it after
    MLIRGPU_SERVER_TIMEOUT, compiles in process and exits, and the pipe ends with it (Ninja reads it to its end)."""
    env, source = served
    assert mlirgpu("compile", source, "-o", str(tmp_path / "first.o"), env=env).returncode == 0
    pid = status(env)[0]
    env["MLIRGPU_SERVER_TIMEOUT"] = "1"
    program = [sys.executable, "-m", "mlirgpu"] if client == "python" else [launchers[client]]
    os.kill(pid, signal.SIGSTOP)
    try:
        compiler, read = _on_a_pipe([*program, "compile", source, "-o", str(tmp_path / "k.o")], env, tmp_path)
        try:
            assert compiler.wait(timeout=120) == 0
            assert (tmp_path / "k.o").exists()
            assert _ends_within(read, 5), f"the client's stream is held by {_holders(read)}"
        finally:
            os.close(read)
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_client_in_a_pid_namespace_with_its_own_proc_is_served(tmp_path, served):
    """`unshare -p -f --mount-proc`: a pid namespace, and a mount namespace whose only difference is its /proc.
    The client sees the server's files: it is served, without a line."""
    _unshare("-p", "-f", "--mount-proc")
    env, source = served
    assert mlirgpu("compile", source, "-o", str(tmp_path / "first.o"), env=env).returncode == 0
    run = subprocess.run(["unshare", "-p", "-f", "--mount-proc", sys.executable, "-m", "mlirgpu", "compile", source,
                          "-o", str(tmp_path / "k.o")], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert (tmp_path / "k.o").exists()
    assert status(env)[1][0] == 2


@pytest.mark.parametrize("client", ["python", "probe"])
def test_a_closed_stdout_ends_a_served_listing_as_sigpipe_ends_a_filter(client, tmp_path, served, launchers):
    """`mlirgpu list-outputs ... | head` with the reader gone: no message, exit status 141 (128 + SIGPIPE), as a
    shell reads a filter that SIGPIPE ended; the server served it (the probe's Python would exit 99)."""
    env, source = served
    assert mlirgpu("server", "start", env=env).returncode == 0
    program = [sys.executable, "-m", "mlirgpu"] if client == "python" else [launchers[client]]
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run([*program, "list-outputs", source, "-o", "k.o", "--dump-intermediates", "dumps"],
                             stdout=write, stderr=subprocess.PIPE, env=env, cwd=tmp_path, timeout=120)
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (128 + signal.SIGPIPE, b"")
    assert status(env)[1][0] == 1
