"""The compile server as a careful daemon towards its clients: each served command runs with its own client's
umask and resource limits (in its runner and in the LLVM worker), whatever limits the client that started the
server had; no client's stream stays open in the server or its runners once the client is gone, even after
`mlirgpu server stop`; a client with stdin, stdout and stderr closed compiles as it does in process. Each case
compares a served command with the same command in process (MLIRGPU_SERVER=off)."""
import os
import re
import select
import signal
import stat
import subprocess
import sys
import time

import pytest

from corpusutil import CORPUS, instantiate
from mlirgpu.server import launcher
from test_service import _server_env, _slow_ptxas_toolkit, _wait_for, mlirgpu, status

LIMIT_KB = 32  # more than the server's card and a small object take; less than the large object's 80 KiB


@pytest.fixture
def server_env(tmp_path):
    env = _server_env(tmp_path, MLIRGPU_CACHE="off")  # every command compiles: no cache entry answers it
    yield env
    subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=env, capture_output=True, timeout=60)


def limited(shell, *args, env, cwd, program=None):
    """`mlirgpu ARGS` (or `program ARGS`) run by bash after `shell` (ulimit, umask, redirections)."""
    command = program or [sys.executable, "-m", "mlirgpu"]
    return subprocess.run(["bash", "-c", f'{shell}; exec "$@"', "bash", *command, *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def large_source(path):
    """A kernel reading a 12,000-entry table: an object of about 80 KiB, dumps of up to 180 KiB."""
    table = ", ".join(str(i * 7919 % 100003) for i in range(12000))
    path.write_text(
        'module attributes {gpu.container_module} {\n'
        '  gpu.module @big [#nvvm.target<chip = "sm_80", O = 3>] {\n'
        f'    llvm.mlir.global internal constant @table(dense<[{table}]> : tensor<12000xi32>) '
        '{addr_space = 1 : i32} : !llvm.array<12000 x i32>\n'
        '    llvm.func @lookup(%i: i32, %y: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {\n'
        '      %t = llvm.mlir.addressof @table : !llvm.ptr<1>\n'
        '      %idx = llvm.sext %i : i32 to i64\n'
        '      %p = llvm.getelementptr %t[0, %idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, !llvm.array<12000 x i32>\n'
        '      %v = llvm.load %p : !llvm.ptr<1> -> i32\n'
        '      llvm.store %v, %y : i32, !llvm.ptr<1>\n'
        '      llvm.return\n'
        '    }\n'
        '  }\n'
        '}\n')
    return str(path)


def _served(env):
    return status(env)[1][0]


@pytest.mark.parametrize("option", ["-f", "-S -f"], ids=["hard", "soft"])
def test_a_server_started_under_a_file_size_limit_serves_later_clients_in_full(option, tmp_path, server_env):
    """The first client runs under `ulimit -f` and starts the server: a later client without that limit writes
    an object larger than it in full (the server took a fresh login's soft limits; one whose hard limit is too
    low for the client is replaced by a server of the client's)."""
    small = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    big = large_source(tmp_path / "big.mlir")
    first = limited(f"ulimit {option} {LIMIT_KB}", "compile", small, "-o", "k.o", env=server_env, cwd=tmp_path)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert _served(server_env) == 1  # the first client started the server, which served it
    reference = mlirgpu("compile", big, "-o", "reference.o", env=dict(server_env, MLIRGPU_SERVER="off"), cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr
    run = mlirgpu("compile", big, "-o", "big.o", env=server_env, cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert (tmp_path / "big.o").read_bytes() == (tmp_path / "reference.o").read_bytes()
    assert _served(server_env) >= 1


def test_each_served_command_keeps_its_clients_file_size_limit(tmp_path, server_env):
    """A client under `ulimit -f` fails as it does in process (same exit code and message, no object), and the
    next client of the same server, without the limit, writes its object."""
    assert mlirgpu("server", "start", env=server_env).returncode == 0
    results = {}
    for mode in ("off", "on"):
        work = tmp_path / mode
        work.mkdir()
        large_source(work / "big.mlir")
        run = limited(f"ulimit -f {LIMIT_KB}", "compile", "big.mlir", "-o", "big.o", "--dump-intermediates", "D",
                      env=dict(server_env, MLIRGPU_SERVER=mode), cwd=work)
        results[mode] = (run.returncode, run.stdout, run.stderr, (work / "big.o").exists())
    assert results["on"] == results["off"]
    assert results["on"][0] != 0 and not results["on"][3]
    assert "File too large" in results["on"][2] or "SIGXFSZ" in results["on"][2], results["on"][2]
    assert _served(server_env) == 1
    run = mlirgpu("compile", "big.mlir", "-o", "big.o", env=server_env, cwd=tmp_path / "on")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert _served(server_env) == 2


def _probing_toolkit(tmp_path, cuda_root):
    """A CUDA root whose ptxas (run by the compile's LLVM worker) writes the soft limits it was started with
    (file size, open files, core, address space, data, CPU seconds) to $LIMITS_LOG."""
    toolkit = _slow_ptxas_toolkit(tmp_path, cuda_root, 0)
    ptxas = os.path.join(toolkit, "bin", "ptxas")
    with open(ptxas, "w") as script:
        script.write('#!/bin/sh\ncase "$*" in *-arch*) for option in f n c v d t; do ulimit -S -$option; done '
                     f'> "$LIMITS_LOG";; esac\nexec {os.path.join(cuda_root, "bin", "ptxas")} "$@"\n')
    return toolkit


def test_a_served_command_and_its_tools_run_with_the_clients_limits(tmp_path, server_env, cuda_root):
    """The tools a served compile starts have the client's soft limits, as in process (CPU seconds: those left
    to the client, counted from the start of the command)."""
    toolkit = _probing_toolkit(tmp_path, cuda_root)
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert mlirgpu("server", "start", env=server_env).returncode == 0
    shell = "ulimit -S -f 200000; ulimit -S -n 300; ulimit -S -c 0; ulimit -S -v 16000000; ulimit -S -d 16000000; " \
            "ulimit -S -t 1000"
    seen = {}
    for mode in ("off", "on"):
        log = tmp_path / f"{mode}.limits"
        run = limited(shell, "compile", source, "-o", f"{mode}.o", "--toolkit", toolkit, cwd=tmp_path,
                      env=dict(server_env, MLIRGPU_SERVER=mode, LIMITS_LOG=str(log)))
        assert run.returncode == 0 and run.stderr == "", run.stderr
        seen[mode] = log.read_text().split()
    assert seen["off"][:5] == ["400000", "300", "0", "16000000", "16000000"]  # dash counts file size in 512 bytes
    assert seen["on"][:5] == seen["off"][:5]
    assert all(1000 <= int(seen[mode][5]) <= 1100 for mode in seen), seen
    assert _served(server_env) == 1
    # MLIR's tools too: the limited command started its mlir-translate itself (a run the server's fork server
    # hands over has the server's limits); a command without limits takes one.
    assert _handed_over(server_env) == 0
    run = mlirgpu("compile", source, "-o", "free.o", "--toolkit", toolkit, cwd=tmp_path,
                  env=dict(server_env, LIMITS_LOG=str(tmp_path / "free.limits")))
    assert run.returncode == 0, run.stderr
    assert _handed_over(server_env) >= 1


def _handed_over(env):
    return int(re.search(r"handed over (\d+) tool runs", mlirgpu("server", "status", env=env).stdout).group(1))


def _modes(folder):
    return {os.path.relpath(os.path.join(directory, name), folder): stat.S_IMODE(os.lstat(os.path.join(directory,
                                                                                                       name)).st_mode)
            for directory, folders, names in os.walk(folder) for name in folders + names}


@pytest.mark.parametrize("umask", ["077", "002"])
def test_outputs_take_the_clients_umask(umask, tmp_path, server_env, cuda_root):
    """Every output (object, header, depfile, each dump, those the LLVM worker writes too) gets the mode the
    client's umask gives in process, whatever umask the server has."""
    assert mlirgpu("server", "start", env=server_env).returncode == 0  # under this test's umask
    modes = {}
    for mode in ("off", "on"):
        work = tmp_path / mode
        work.mkdir()
        instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), work / "k.mlir", "", 3)
        run = limited(f"umask {umask}", "compile", "k.mlir", "-o", "out/k.o", "--header", "out/k.h", "--depfile",
                      "out/k.d", "--dump-intermediates", "out/D", "--toolkit", cuda_root,
                      env=dict(server_env, MLIRGPU_SERVER=mode), cwd=work)
        assert run.returncode == 0, run.stderr
        modes[mode] = _modes(work / "out")
    assert modes["on"] == modes["off"]
    expected = 0o666 & ~int(umask, 8)
    assert {mode for name, mode in modes["on"].items() if name != "D"} == {expected}, modes["on"]
    assert _served(server_env) == 1


def _on_a_pipe(command, env, cwd):
    """`command` started with stdout and stderr on one pipe: the process and the pipe's reading end."""
    read, write = os.pipe()
    process = subprocess.Popen(command, stdout=write, stderr=write, env=env, cwd=cwd)
    os.close(write)
    return process, read


def _ends_within(read, seconds):
    """Whether every writer of the pipe closed it within `seconds` (a log reader, `cat`, would end then)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _w, _x = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
        if ready and not os.read(read, 1 << 16):
            return True
    return False


def _holders(read):
    """The processes other than this one with a descriptor of the pipe whose reading end is `read`."""
    link = f"pipe:[{os.fstat(read).st_ino}]"
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(pid) != os.getpid() and any(os.readlink(f"/proc/{pid}/fd/{fd}") == link
                                               for fd in os.listdir(f"/proc/{pid}/fd")):
                found.append(pid)
        except OSError:
            continue
    return found


def test_no_clients_stream_stays_open_when_it_started_the_server_or_after_a_stop(tmp_path, server_env, cuda_root):
    """`mlirgpu compile ... 2>&1 | cat`: the pipe ends with the command when the command started the server
    (no process of the server holds it), and with `mlirgpu server stop`; a client killed after its server was
    stopped, while its compile waits in a tool, leaves no copy of its streams open (its runner ends itself)."""
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    compile_command = [sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o")]
    assert status(server_env)[0] is None
    for command in (compile_command, [sys.executable, "-m", "mlirgpu", "server", "stop"]):
        process, read = _on_a_pipe(command, server_env, tmp_path)
        try:
            assert process.wait(timeout=120) == 0
            assert _ends_within(read, 10), f"{command[3:]}: its stream is held by {_holders(read)}"
        finally:
            os.close(read)
        if command is compile_command:
            assert status(server_env)[1][0] == 1  # the compile started the server, which served it

    toolkit = _slow_ptxas_toolkit(tmp_path, cuda_root, 120)  # a tool that hangs
    assert mlirgpu("server", "start", env=server_env).returncode == 0
    client, read = _on_a_pipe([*compile_command, "--toolkit", toolkit], server_env, tmp_path)
    try:
        _wait_for(tmp_path / "in-ptxas")
        assert mlirgpu("server", "stop", env=server_env).returncode == 0
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=60)
        assert _ends_within(read, 10), f"the killed client's stream is held by {_holders(read)}"
    finally:
        os.close(read)


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    """The native launcher, and a probe of it whose Python fails (99): a probe's command that exits 0 was served."""
    folder = tmp_path_factory.mktemp("launcher")
    python = folder / "python"
    python.write_text("#!/bin/sh\nexit 99\n")
    python.chmod(0o755)
    assert launcher.build(str(folder / "probe"), python=str(python)) is None
    return str(folder / "probe")


@pytest.mark.parametrize("client", ["python", "native"])
def test_a_client_with_its_streams_closed_compiles_as_in_process(client, tmp_path, server_env, native):
    """`mlirgpu compile ... <&- >&- 2>&-`: the same exit code and object as in process, for a good source and a
    bad one, through the Python client and the native launcher (which sends its limits itself)."""
    assert mlirgpu("server", "start", env=server_env).returncode == 0
    program = [native] if client == "native" else None
    small = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    (tmp_path / "bad.mlir").write_text(open(small).read().replace("llvm.return", "llvm.frobnicate"))
    for source, code in ((small, 0), ("bad.mlir", 1)):
        reference = mlirgpu("compile", source, "-o", "reference.o", env=dict(server_env, MLIRGPU_SERVER="off"),
                            cwd=tmp_path)
        assert reference.returncode == code
        run = limited("exec <&- >&- 2>&-", "compile", source, "-o", "served.o", env=server_env, cwd=tmp_path,
                      program=program)
        assert run.returncode == code
        assert (tmp_path / "served.o").exists() == (code == 0)
        if code == 0:
            assert (tmp_path / "served.o").read_bytes() == (tmp_path / "reference.o").read_bytes()
    assert _served(server_env) == 2
    if client == "native":  # its limits too: under `ulimit -f` as in process
        work = tmp_path / "big"
        work.mkdir()
        large_source(work / "big.mlir")
        run = limited(f"ulimit -f {LIMIT_KB}", "compile", "big.mlir", "-o", "big.o", env=server_env, cwd=work,
                      program=program)
        assert run.returncode == 1 and not (work / "big.o").exists(), run.stderr
        assert _served(server_env) == 3
