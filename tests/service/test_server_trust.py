"""The compile server as a careful daemon: it trusts nothing in its folder that it did not make (a library or a
log planted there by another user while the folder was open), serves only clients that see the files it sees
(another root or other mounts compile in process after one warning line; a pid namespace of its own, with its
own /proc or not, is served), survives any request (deep JSON), and takes odd settings and places (a timeout of
`inf`, a folder path longer than a socket address, a deleted working folder) without a traceback or a wait."""
import glob
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

import pytest

from corpusutil import CORPUS, instantiate
from test_service import _server_env, mlirgpu, status
from mlirgpu.execution import forkserver, rendezvous

as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root (another user's files, namespaces)")


@pytest.fixture
def served(tmp_path):
    """A server environment (stage cache off, so each compile runs its tools) and a source; the server is
    stopped at the end."""
    env = _server_env(tmp_path, MLIRGPU_CACHE="off")
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    yield env, source
    mlirgpu("server", "stop", env=env)


def _one_warning(stderr, words):
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlirgpu: warning: ") and words in lines[0], stderr


@as_root
@pytest.mark.needs("cc", "tools/bootstrap installs gcc")
def test_a_planted_library_is_not_loaded(tmp_path, served):
    env, source = served
    marker = tmp_path / "planted-ran"
    planted = tmp_path / "planted.c"
    planted.write_text('#include <stdio.h>\n__attribute__((constructor)) static void planted(void) '
                       f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    with open(forkserver.SOURCE, "rb") as handle:
        name = f"forkserver-{hashlib.sha256(handle.read()).hexdigest()[:16]}.so"
    library = os.path.join(env["MLIRGPU_SERVER_DIR"], name)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", library, str(planted)], check=True)
    os.chown(library, 65534, 65534)  # another user's, left while the folder was open to others
    run = mlirgpu("compile", source, "-o", str(tmp_path / "a.o"), env=env)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert not marker.exists()
    assert "mlir-translate" in mlirgpu("server", "status", env=env).stdout.split("loaded: ")[1]
    info = os.lstat(library)
    assert info.st_uid == os.getuid() and not info.st_mode & 0o022  # built anew, ours


def test_planted_links_are_not_written_through(tmp_path, served):
    env, source = served
    folder = env["MLIRGPU_SERVER_DIR"]
    for name in ("server.log", "server.lock"):
        os.symlink(tmp_path / f"{name}-target", os.path.join(folder, name))
    run = mlirgpu("compile", source, "-o", str(tmp_path / "a.o"), env=env)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert status(env)[0]
    for name in ("server.log", "server.lock"):
        assert not (tmp_path / f"{name}-target").exists()
        assert not os.path.islink(os.path.join(folder, name))


@as_root
def test_another_users_socket_is_sent_nothing(tmp_path, served):
    """A socket another user's process listens on in the folder (left from while it was open to others): a
    client sends it nothing (no request, no stream); a server of this user replaces it."""
    env, source = served
    path = os.path.join(env["MLIRGPU_SERVER_DIR"], os.path.basename(rendezvous.socket_path("")))
    # Bound here, listening as another user (the socket's peer is who called listen).
    listener = subprocess.Popen([sys.executable, "-c", f"""
import os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind({path!r})
os.setgid(65534); os.setuid(65534); s.listen(8); print("listening", flush=True)
while True:
    c, _ = s.accept()
    if c.recvmsg(1 << 20, 64)[0]:
        print("a request", flush=True)
    c.close()
"""], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline() == "listening\n"
        run = mlirgpu("compile", source, "-o", str(tmp_path / "a.o"), env=env)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        assert status(env)[1][0] == 1  # served, by a server of this user
    finally:
        listener.kill()
    assert listener.communicate()[0] == ""


def _unshare(*options):
    if os.getuid() != 0 or not shutil.which("unshare") or \
            subprocess.run(["unshare", *options, "true"], capture_output=True).returncode != 0:
        pytest.skip(f"needs `unshare {' '.join(options)}` (root)")


def test_a_client_in_another_mount_namespace_compiles_in_process(tmp_path, served):
    """The same path names another file in the client's namespace (a tmpfs mounted there only): a server that
    compiled it would compile the file the client cannot see and write outputs it never sees."""
    _unshare("-m")
    env, source = served
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    shutil.copy(source, hidden / "k.mlir")
    assert mlirgpu("compile", source, "-o", str(tmp_path / "first.o"), env=env).returncode == 0  # server runs
    script = (f'mount -t tmpfs none "{hidden}" && cp "{source}" "{hidden}/k.mlir" && '
              f'"{sys.executable}" -m mlirgpu compile "{hidden}/k.mlir" -o "{hidden}/k.o"; code=$?; '
              f'test -s "{hidden}/k.o" && echo seen; exit $code')
    run = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "seen", run.stderr
    _one_warning(run.stderr, "another mount namespace")
    assert not (hidden / "k.o").exists()
    assert status(env)[1][0] == 1  # the first compile only


def _slow_tools(tmp_path):
    """MLIR_BIN with an mlir-translate that waits 1.5 s first: a command the client waits for past its 1 s check
    of the server's runner."""
    from mlirgpu.llvm import toolchain

    folder = tmp_path / "slow"
    folder.mkdir()
    slow = folder / "mlir-translate"
    slow.write_text(f'#!/bin/sh\nsleep 1.5\nexec "{toolchain.llvm_tool("mlir-translate")}" "$@"\n')
    slow.chmod(0o755)
    os.symlink(toolchain.llvm_tool("mlir-opt"), folder / "mlir-opt")
    return str(folder)


def test_a_client_in_a_pid_namespace(tmp_path, served):
    """In a pid namespace of its own the client cannot see the server's runner by its pid: it is served all the
    same (no false "ended without an answer"); with its own /proc as well, tests/service/test_server_requests.py."""
    _unshare("-p", "-f")
    env, source = served
    env["MLIR_BIN"] = _slow_tools(tmp_path)
    assert mlirgpu("compile", source, "-o", str(tmp_path / "first.o"), env=env).returncode == 0  # server runs
    command = [sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o")]
    run = subprocess.run(["unshare", "-p", "-f", *command], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert status(env)[1][0] == 2


def test_deep_json_does_not_stop_the_server(served):
    env, source = served
    assert mlirgpu("compile", source, "-o", source + ".o", env=env).returncode == 0
    pid = status(env)[0]
    (path,) = glob.glob(os.path.join(env["MLIRGPU_SERVER_DIR"], "*.sock"))
    malformed = json.dumps({"kind": "run", "fingerprint": rendezvous.fingerprint(), "argv": "x", "cwd": 1})
    for request in (b"[" * 100000, b'{"kind": "status", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                    malformed.encode()):
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
            connection.settimeout(10)
            connection.connect(path)
            connection.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
            assert b'"error"' in connection.recv(1 << 16)
    assert status(env)[0] == pid


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "-1", "soon"])
def test_server_timeout_values(served, value):
    """`inf` waits a day; a value that is no number of seconds is an error naming it (as every variable's is,
    mlirgpu.util.environment), before anything is compiled."""
    env, source = served
    env["MLIRGPU_SERVER_TIMEOUT"] = value
    run = mlirgpu("compile", source, "-o", source + ".o", env=env)
    if value in ("inf", "1e400"):
        assert run.returncode == 0 and run.stderr == ""
    else:
        assert run.returncode == 1 and not os.path.exists(source + ".o"), run.stderr
        assert run.stderr.startswith(f"mlirgpu: error: MLIRGPU_SERVER_TIMEOUT='{value}' is not a number of "
                                     "seconds") and run.stderr.count("\n") == 1, run.stderr


def test_a_server_that_cannot_start_costs_no_wait(tmp_path, served):
    """A server that ends at its start (here: a folder planted where its lock goes) is not waited for, however
    long MLIRGPU_SERVER_TIMEOUT allows: one line, and the compile in process."""
    env, source = served
    env["MLIRGPU_SERVER_TIMEOUT"] = "inf"
    os.makedirs(os.path.join(env["MLIRGPU_SERVER_DIR"], "server.lock", "planted"))
    run = mlirgpu("compile", source, "-o", str(tmp_path / "a.o"), env=env)
    assert run.returncode == 0 and (tmp_path / "a.o").exists()
    _one_warning(run.stderr, "the compile server failed (it did not start)")


def test_a_long_server_folder_is_served_at_once(tmp_path, served):
    """A socket path longer than a socket address holds (108 bytes) is reached through the folder's descriptor."""
    env, source = served
    folder = tmp_path / ("f" * 200)
    folder.mkdir(mode=0o700)
    env["MLIRGPU_SERVER_DIR"] = str(folder)
    try:
        started = time.monotonic()
        for output in ("a.o", "b.o"):
            run = mlirgpu("compile", source, "-o", str(tmp_path / output), env=env)
            assert run.returncode == 0 and run.stderr == "", run.stderr
        assert time.monotonic() - started < 8
        assert status(env)[1][0] == 2
    finally:
        mlirgpu("server", "stop", env=env)


def test_a_deleted_working_folder_is_one_line(tmp_path, served):
    env, source = served
    gone = tmp_path / "gone"
    gone.mkdir()
    run = subprocess.run(f'cd "{gone}" && rmdir "{gone}" && "{sys.executable}" -m mlirgpu compile k.mlir -o k.o',
                         shell=True, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stderr == "mlirgpu: error: the current folder was deleted (fix: run the command from a folder " \
                         "that exists)\n"
