"""The compile server and its thin client: every command gives the same outputs, messages and exit codes as in
process; a server of an edited installation is replaced; other users are refused; a server that dies, hangs or
answers garbage costs one warning line and an in-process compile; a killed client stops its compile; clients
starting at once end with one server; SCons builds take their workers from a running server."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from hostile_cases import CASES, fill, left_files, materialise
from sconsutil import SCONS, TOOLPATH

PACKAGE_ROOT = os.path.join(ROOT, "site_scons")


def _server_env(tmp_path, **extra):
    folder = tmp_path / "server"
    folder.mkdir(mode=0o700, exist_ok=True)
    return dict(os.environ, PYTHONPATH=PACKAGE_ROOT, MLIRGPU_SERVER="on", MLIRGPU_SERVER_DIR=str(folder),
                MLIRGPU_SERVER_IDLE="60", **extra)


@pytest.fixture
def server_env(tmp_path):
    env = _server_env(tmp_path)
    yield env
    subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=env, capture_output=True)


def mlirgpu(*args, env, cwd=None, **kw):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120, **kw)


def status(env):
    run = mlirgpu("server", "status", env=env)
    match = re.search(r"compile server pid (\d+)", run.stdout)
    served = re.search(r"served (\d+) commands \(in \d+ runners\) and (\d+) builds' workers; refused (\d+)", run.stdout)
    return (int(match.group(1)) if match else None), (tuple(int(n) for n in served.groups()) if served else None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_hostile_case_reads_the_same_through_the_server(name, tmp_path, server_env):
    """The bad-input table through both paths, in twin folders: the same exit code, the same error line, the
    same files left (none where the compile failed)."""
    case = CASES[name]
    results = {}
    for mode in ("off", "on"):
        work = tmp_path / mode / "work"
        work.mkdir(parents=True)
        (tmp_path / mode / "tmp").mkdir()
        source = materialise(work, name, case)
        args = [fill(arg, work, source) for arg in case.args]
        if "-o" not in args:
            args = ["-o", "out.o", *args]
        env = dict(server_env, MLIRGPU_SERVER=mode, TMPDIR=str(tmp_path / mode / "tmp"), **case.env)
        run = mlirgpu("compile", os.path.basename(source) if source.startswith(str(work)) else source, *args,
                      env=env, cwd=work)
        stderr = run.stderr.replace(str(tmp_path / mode), "<case>")
        results[mode] = (run.returncode, run.stdout, stderr, left_files(work), os.listdir(tmp_path / mode / "tmp"))
    assert results["on"] == results["off"]
    assert "warning: the compile server" not in results["on"][2]


@pytest.mark.parametrize("chunk", range(4))
def test_a_runner_serves_each_command_as_a_fresh_process_would(chunk, tmp_path, server_env, cuda_root):
    """A quarter of the bad-input table through one server, each case after a good compile (with the stage
    cache, dumps, a header and a depfile) that the same runner served: every result (exit code, messages, files, the
    temporary folder) is the in-process one, so a runner keeps nothing of a command that changes the next. In
    process, the good compile runs once; each case starts from a copy of the stage cache it filled, the state a
    served case starts from."""
    good = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "good.mlir", "", 3)

    def good_compile(base, env):
        run = mlirgpu("compile", good, "-o", str(base / "good.o"), "--dump-intermediates", str(base / "good.d"),
                      "--header", str(base / "good.h"), "--depfile", str(base / "good.dep"), "--toolkit", cuda_root,
                      env=env, cwd=base)
        return [(run.returncode, run.stdout, run.stderr.replace(str(base), "<case>")), left_files(base / "good.d"),
                (base / "good.dep").read_text().replace(str(base), "<case>")]

    def folders(base):
        (base / "tmp").mkdir(parents=True)
        (base / "work").mkdir()
        return dict(server_env, TMPDIR=str(base / "tmp"), MLIRGPU_CACHE_DIR=str(base / "cache"))

    first = tmp_path / "in-process" / "good"  # as deep as a case's folder: the dumps name the source relatively
    env = dict(folders(first), MLIRGPU_SERVER="off")
    good_in_process = good_compile(first, env)
    assert good_in_process[0][0] == 0, good_in_process[0]
    names = sorted(CASES)[chunk::4]
    for name in names:
        case = CASES[name]
        results = {}
        for mode in ("off", "on"):
            base = tmp_path / name / mode
            env = dict(folders(base), MLIRGPU_SERVER=mode)
            if mode == "on":
                before = good_compile(base, env)
            else:
                shutil.copytree(first / "cache", base / "cache")
                before = good_in_process
            source = materialise(base / "work", name, case)
            args = [fill(arg, base / "work", source) for arg in case.args]
            if "-o" not in args:
                args = ["-o", "out.o", *args]
            run = mlirgpu("compile", os.path.basename(source) if source.startswith(str(base)) else source, *args,
                          env=dict(env, **case.env), cwd=base / "work")
            left = sorted(os.listdir(base / "tmp") + (os.listdir(first / "tmp") if mode == "off" else []))
            results[mode] = [before, (run.returncode, run.stdout, run.stderr.replace(str(base), "<case>")),
                             left_files(base / "work"), left]
        assert results["on"] == results["off"], name
    served = mlirgpu("server", "status", env=server_env).stdout
    commands, runners = (int(n) for n in re.search(r"served (\d+) commands \(in (\d+) runners\)", served).groups())
    assert commands == 2 * len(names) and runners < commands, served  # runners served commands one after another


def test_outputs_messages_and_listings_are_the_same(tmp_path, server_env, cuda_root):
    """A compile with every output (dumps, header, depfile, warnings), `list-outputs`, and a usage error."""
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    empty = tmp_path / "empty.mlir"
    empty.write_text('gpu.module @e [#nvvm.target<chip = "sm_80">] {\n  llvm.func @f() { llvm.return }\n}\n')
    commands = [
        ["compile", source, "-o", "k.o", "--dump-intermediates", "D", "--header", "k.h", "--depfile", "k.d",
         "--toolkit", cuda_root],
        ["compile", str(empty), "-o", "e.o"],
        ["list-outputs", source, "-o", "k.o", "--dump-intermediates", "D"],
        ["compile", source],
        ["compile", source, "-o", "x.o", "--format", "nonsense"],
    ]
    results = {}
    for mode in ("off", "on"):
        work = tmp_path / mode
        work.mkdir()
        runs = [mlirgpu(*command, env=dict(server_env, MLIRGPU_SERVER=mode, MLIRGPU_CACHE="off"), cwd=work)
                for command in commands]
        results[mode] = ([(run.returncode, run.stdout, run.stderr) for run in runs], left_files(work))
    assert results["on"] == results["off"]
    assert results["on"][0][1][2].count("has no kernels") == 1
    assert status(server_env)[1][0] >= len(commands)


def test_only_a_command_that_translates_takes_a_prestarted_mlir_translate(tmp_path, server_env, cuda_root):
    """The server keeps mlir-translates loaded for the commands that translate; listing outputs or a compile
    whose modules all come from the stage cache takes none (each would be a tool start-up spent for nothing)."""
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    env = dict(server_env, MLIRGPU_CACHE="on", MLIRGPU_CACHE_DIR=str(tmp_path / "cache"))

    def handed_over():
        run = mlirgpu("server", "status", env=env)
        return int(re.search(r"handed over (\d+) tool runs", run.stdout).group(1))

    compile_ = ["compile", source, "-o", "k.o", "--dump-intermediates", "D", "--toolkit", cuda_root]
    taken = []
    for command in (["list-outputs", source, "-o", "k.o", "--dump-intermediates", "D"], compile_, compile_):
        run = mlirgpu(*command, env=env, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        taken.append(handed_over())
    assert taken == [0, 1, 1]
    record = json.loads((tmp_path / "D" / "mlirgpu.json").read_text())
    assert {how for job in record["jobs"] for how in job["stages"].values()} == {"cached"}


def _loaded_tools(env):
    run = mlirgpu("server", "status", env=env)
    tools = re.search(r"handed over (\d+) tool runs \(loaded: ([^)]*)\)", run.stdout)
    return int(tools.group(1)), tools.group(2)


def test_the_server_keeps_the_llvm_tools_of_a_compile_loaded_and_ends_them_with_it(tmp_path, server_env):
    """A ROCDL compile runs mlir-translate, llvm-mc and ld.lld: the server keeps each loaded in a fork server
    from its first run on (mlir-translate from the start), and every served compile equals the in-process one.
    The fork servers end with the server."""
    source = instantiate(os.path.join(CORPUS, "multi_kernel.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    env = dict(server_env, MLIRGPU_CACHE="off")
    outputs = []
    for mode, name in (("off", "a"), ("on", "b"), ("on", "c")):
        run = mlirgpu("compile", source, "-o", f"{name}.o", "--dump-intermediates", name, env=dict(env, MLIRGPU_SERVER=mode),
                      cwd=tmp_path)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        outputs.append([(tmp_path / name / dump).read_bytes() for dump in sorted(os.listdir(tmp_path / name))
                        if dump != "mlirgpu.json"] + [(tmp_path / f"{name}.o").read_bytes()])
    assert outputs[0] == outputs[1] == outputs[2]
    handed, loaded = _loaded_tools(env)
    assert loaded == "lld, llvm-mc, mlir-translate"
    assert handed >= 4  # a translation in each served compile, llvm-mc and ld.lld in the second
    server = status(env)[0]
    forkservers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _parent(pid) == str(server)
                   and os.path.basename(_cmdline(pid)) in ("lld", "llvm-mc", "mlir-translate")]
    assert len(forkservers) == 3, forkservers
    assert mlirgpu("server", "stop", env=env).returncode == 0
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in forkservers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_running(pid) for pid in forkservers)


def test_without_a_c_compiler_the_server_prestarts_mlir_translate(tmp_path, server_env, cuda_root):
    """No compiler for the fork server's library: the server says why in its log and serves prestarted
    mlir-translates instead; compiles are the same."""
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    env = dict(server_env, MLIRGPU_CACHE="off", CC="false")
    runs = [mlirgpu("compile", source, "-o", f"{name}.o", "--toolkit", cuda_root, env=dict(env, MLIRGPU_SERVER=mode),
                    cwd=tmp_path) for mode, name in (("off", "a"), ("on", "b"))]
    assert [(run.returncode, run.stderr) for run in runs] == [(0, ""), (0, "")]
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()
    assert _loaded_tools(env) == (1, "none")
    log = (tmp_path / "server" / "server.log").read_text()
    assert "tools start per run: false failed on forkserver.c" in log


@pytest.mark.parametrize("edited", ["version.py", "pipeline/driver.py", "frontends/scons/tool.py"])
def test_a_server_of_an_edited_installation_is_replaced(tmp_path, edited):
    """An edit of a module of the package, at its top or in a subpackage at any depth: the next compile is
    served by a new server (the running one, of the old code, is replaced and ends)."""
    package = tmp_path / "install"
    shutil.copytree(PACKAGE_ROOT, package, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(_server_env(tmp_path), PYTHONPATH=str(package))
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    try:
        assert mlirgpu("compile", source, "-o", str(tmp_path / "a.o"), env=env).returncode == 0
        first, _ = status(env)
        assert first
        module = package / "mlirgpu" / edited
        module.write_text(module.read_text() + "\n# an edit\n")
        run = mlirgpu("compile", source, "-o", str(tmp_path / "b.o"), env=env)
        assert run.returncode == 0 and run.stderr == ""
        second, served = status(env)
        assert second and second != first and served[0] == 1  # the new server served the compile
        assert (tmp_path / "a.o").read_bytes() == (tmp_path / "b.o").read_bytes()
        deadline = time.monotonic() + 10
        while _running(first) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(first)
    finally:
        mlirgpu("server", "stop", env=env)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another user")
def test_another_user_is_refused(tmp_path, server_env):
    folder = tempfile.mkdtemp(dir="/tmp", prefix="mlirgpu-test-server-")  # others can reach it (not tmp_path)
    server_env["MLIRGPU_SERVER_DIR"] = folder
    mlirgpu("server", "start", env=server_env)
    path = next(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".sock"))
    os.chmod(folder, 0o711)  # the folder would keep others out; open it to reach the uid check
    os.chmod(path, 0o777)
    try:
        probe = ("import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.settimeout(10); "
                 f"s.connect({path!r})\ntry:\n  s.send(b'{{\"kind\": \"status\"}}'); print(repr(s.recv(65536)))\n"
                 "except (BrokenPipeError, ConnectionResetError):\n  print(repr(b''))")
        run = subprocess.run([shutil.which("python3", path="/usr/bin:/bin"), "-c", probe], capture_output=True,
                             text=True, user=65534, timeout=30, cwd="/")
    finally:
        os.chmod(folder, 0o700)
    try:
        assert run.stdout.strip() == "b''", run.stdout + run.stderr  # closed without an answer
        assert status(server_env)[1][2] == 1
    finally:
        mlirgpu("server", "stop", env=server_env)
        shutil.rmtree(folder, ignore_errors=True)


def _slow_ptxas_toolkit(tmp_path, cuda_root, seconds):
    """A CUDA root whose ptxas sleeps (and says so by a file) before compiling; fault tests run with the stage
    cache off, so that ptxas runs every time."""
    toolkit = tmp_path / "cuda"
    (toolkit / "bin").mkdir(parents=True)
    for name in ("nvvm", "include"):
        if os.path.exists(os.path.join(cuda_root, name)):
            os.symlink(os.path.join(cuda_root, name), toolkit / name)
    (toolkit / "bin" / "fatbinary").symlink_to(os.path.join(cuda_root, "bin", "fatbinary"))
    ptxas = toolkit / "bin" / "ptxas"
    ptxas.write_text(f'#!/bin/sh\ncase "$*" in *-arch*) touch {tmp_path}/in-ptxas; sleep {seconds};; esac\n'
                     f'exec {os.path.join(cuda_root, "bin", "ptxas")} "$@"\n')
    ptxas.chmod(0o755)
    return str(toolkit)


def _wait_for(path, seconds=60):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_clients_streams_close_when_it_exits(tmp_path, server_env, cuda_root):
    """A build tool (Ninja, make) reads a command's output until every copy of its pipe is closed: nothing the
    server keeps (prestarted tools, the command winding down its workers) may hold a client's streams."""
    import select

    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    mlirgpu("server", "start", env=server_env)
    for index in range(4):
        client = subprocess.Popen([sys.executable, "-m", "mlirgpu", "compile", source, "-o",
                                   str(tmp_path / f"{index}.o"), "--toolkit", cuda_root],
                                  env=server_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert client.wait(timeout=120) == 0
        for stream in (client.stdout, client.stderr):
            readable, _w, _x = select.select([stream], [], [], 5)
            assert readable and stream.read() == b"", f"compile {index}: its stream stays open after it exited"
    assert status(server_env)[1][0] >= 4


def _compile_in_ptxas(tmp_path, server_env, cuda_root, seconds):
    """A compile through a fresh server, caught inside its (slowed) ptxas: the object an in-process compile
    makes, the server's pid, and the running client (writing k.o)."""
    server_env["MLIRGPU_CACHE"] = "off"
    toolkit = _slow_ptxas_toolkit(tmp_path, cuda_root, seconds)
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    reference = mlirgpu("compile", source, "-o", str(tmp_path / "ref.o"), "--toolkit", toolkit,
                        env=dict(server_env, MLIRGPU_SERVER="off"))
    assert reference.returncode == 0
    os.unlink(tmp_path / "in-ptxas")
    mlirgpu("server", "start", env=server_env)
    server, _ = status(server_env)
    client = subprocess.Popen([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o"),
                               "--toolkit", toolkit], env=server_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "in-ptxas")
    return (tmp_path / "ref.o").read_bytes(), server, client


def test_a_killed_server_costs_a_warning_and_an_in_process_compile(tmp_path, server_env, cuda_root):
    reference, server, client = _compile_in_ptxas(tmp_path, server_env, cuda_root, 2)
    os.killpg(os.getpgid(server), signal.SIGKILL)  # the server and every process of its compile
    _out, err = client.communicate(timeout=120)
    assert client.returncode == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlirgpu: warning: the compile server failed"), err
    assert lines[0].endswith("compiling in this process")
    assert (tmp_path / "k.o").read_bytes() == reference


def test_a_compile_outlives_its_server_but_not_its_client(tmp_path, server_env, cuda_root):
    """kill -9 of the server process alone: the compile in flight finishes and answers. kill -9 of the client:
    its compile is stopped, and nothing is written afterwards."""
    server_env["MLIRGPU_CACHE"] = "off"
    toolkit = _slow_ptxas_toolkit(tmp_path, cuda_root, 1)
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    mlirgpu("server", "start", env=server_env)
    server, _ = status(server_env)
    client = subprocess.Popen([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "a.o"),
                               "--toolkit", toolkit], env=server_env, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "in-ptxas")
    os.kill(server, signal.SIGKILL)
    _out, err = client.communicate(timeout=120)
    assert client.returncode == 0 and err == "" and (tmp_path / "a.o").exists()
    os.unlink(tmp_path / "in-ptxas")
    client = subprocess.Popen([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "b.o"),
                               "--toolkit", toolkit], env=server_env, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "in-ptxas")
    client.kill()
    client.wait()
    time.sleep(2.5)  # the compile, had it survived, would have written by now
    assert not (tmp_path / "b.o").exists()


def test_a_compile_in_flight_finishes_when_the_server_is_stopped(tmp_path, server_env, cuda_root):
    """`mlirgpu server stop` while a compile runs: the server ends, the compile finishes in its runner and
    answers its client (no warning, no second compile in process), and the runner ends after it."""
    reference, server, client = _compile_in_ptxas(tmp_path, server_env, cuda_root, 1)
    assert mlirgpu("server", "stop", env=server_env).returncode == 0
    _out, err = client.communicate(timeout=120)
    assert client.returncode == 0 and err == "", err
    assert (tmp_path / "k.o").read_bytes() == reference
    deadline = time.monotonic() + 10
    folder = server_env["MLIRGPU_SERVER_DIR"]
    while time.monotonic() < deadline:  # the server, its runners and their workers all end
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _running(pid)
                and _cmdline(pid).endswith(f"mlirgpu.server.service {folder}")]
        if not left:
            break
        time.sleep(0.1)
    assert not left and not _running(server)


def test_clients_starting_at_once_end_with_one_server(tmp_path, server_env):
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    clients = [subprocess.Popen([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / f"{i}.o")],
                                env=server_env, stderr=subprocess.PIPE, text=True) for i in range(6)]
    for client in clients:
        _out, err = client.communicate(timeout=120)
        assert client.returncode == 0 and err == "", err
    folder = server_env["MLIRGPU_SERVER_DIR"]
    deadline = time.monotonic() + 10  # a server started by a losing client sees the socket taken, and exits
    while True:
        processes = [pid for pid in os.listdir("/proc")
                     if pid.isdigit() and _running(pid) and _cmdline(pid).endswith(f"mlirgpu.server.service {folder}")]
        # A server's own forks (a command still winding down its workers after answering) are not servers.
        parents = {pid: _parent(pid) for pid in processes}  # None: ended meanwhile (a fork winding down)
        servers = [pid for pid, parent in parents.items() if parent is not None and parent not in processes]
        if len(servers) == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(servers) == 1, servers
    assert status(server_env)[1][0] == 6
    outputs = {(tmp_path / f"{i}.o").read_bytes() for i in range(6)}
    assert len(outputs) == 1


def _running(pid):
    """Whether process `pid` runs (a zombie, which no init may reap in a container, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[1]
    except OSError:
        return None


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_an_idle_server_exits(tmp_path):
    env = dict(_server_env(tmp_path), MLIRGPU_SERVER_IDLE="1")
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    assert mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), env=env).returncode == 0
    pid, _ = status(env)
    deadline = time.monotonic() + 20
    while status(env)[0] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert status(env)[0] is None
    time.sleep(0.5)
    assert not _running(pid)


@pytest.mark.parametrize("answer", [None, b"garbage, not JSON", b'{"kind": "started"}'])
def test_a_hanging_or_garbled_server_costs_a_warning(tmp_path, answer):
    """Something listens on the server's socket and never answers, answers garbage, or says `started` and
    then closes: the client compiles in its own process, with one warning line."""
    env = dict(_server_env(tmp_path), MLIRGPU_SERVER_TIMEOUT="1")
    code = (f"import socket, sys; sys.path.insert(0, {PACKAGE_ROOT!r}); from mlirgpu.execution import rendezvous; "
            f"s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); "
            f"s.bind(rendezvous.socket_path({env['MLIRGPU_SERVER_DIR']!r})); s.listen(8); print('ready', flush=True)\n"
            f"while True:\n  c, _ = s.accept(); c.recv(1 << 20)\n"
            + ("  c.send(" + repr(answer) + "); c.close()\n" if answer else "  pass\n"))
    fake = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert fake.stdout.readline().strip() == "ready"
        source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
        run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), env=env)
        assert run.returncode == 0 and (tmp_path / "k.o").exists()
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and "warning: the compile server failed" in lines[0], run.stderr
    finally:
        fake.kill()


def test_a_folder_others_can_enter_is_not_used(tmp_path):
    env = _server_env(tmp_path)
    os.chmod(env["MLIRGPU_SERVER_DIR"], 0o755)
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    run = mlirgpu("compile", source, "-o", str(tmp_path / "k.o"), env=env)
    assert run.returncode == 0 and (tmp_path / "k.o").exists()
    assert run.stderr.strip() == (f"mlirgpu: warning: the compile server is not used: {env['MLIRGPU_SERVER_DIR']} "
                                  "is not a folder of this user closed to others (mode 700)")
    assert not [name for name in os.listdir(env["MLIRGPU_SERVER_DIR"]) if name.endswith(".sock")]


def test_scons_takes_its_workers_from_a_running_server(tmp_path, server_env):
    server_env["MLIRGPU_CACHE"] = "off"  # every build translates
    project = tmp_path / "p"
    project.mkdir()
    shutil.copy(instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "a.mlir", "gfx942", 3), project)
    shutil.copy(instantiate(os.path.join(CORPUS, "multi_kernel.rocdl.mlir"), tmp_path / "b.mlir", "gfx942", 3),
                project)
    (project / "SConstruct").write_text(f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
                                        "env.GpuObject('a', 'a.mlir')\nenv.GpuObject('b', 'b.mlir')\n")
    off = subprocess.run([SCONS, "-Q", "-j2", "DUMP=1"], cwd=project, env=dict(server_env, MLIRGPU_SERVER="off"),
                         capture_output=True, text=True)
    assert off.returncode == 0, off.stderr
    reference = left_files(project / "a.dumps") | left_files(project / "b.dumps")
    objects = [(project / name).read_bytes() for name in ("a.o", "b.o")]
    subprocess.run([SCONS, "-Q", "-c"], cwd=project, env=server_env, check=True, capture_output=True)
    mlirgpu("server", "start", env=server_env)
    on = subprocess.run([SCONS, "-Q", "-j2", "DUMP=1"], cwd=project, env=server_env, capture_output=True, text=True)
    assert on.returncode == 0, on.stderr
    assert status(server_env)[1][1] == 1  # one build's workers
    assert left_files(project / "a.dumps") | left_files(project / "b.dumps") == reference
    assert [(project / name).read_bytes() for name in ("a.o", "b.o")] == objects
    # The build's translations (a batch in SCons, or a worker's own) took the server's prestarted mlir-translates.
    served = mlirgpu("server", "status", env=server_env).stdout
    assert int(re.search(r"handed over (\d+) tool runs", served).group(1)) >= 1, served
    (project / "a.mlir").write_text((project / "a.mlir").read_text() + "// edited\n")  # one source: its worker's
    again = subprocess.run([SCONS, "-Q", "-j2", "DUMP=1"], cwd=project, env=server_env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    after = mlirgpu("server", "status", env=server_env).stdout
    assert int(re.search(r"handed over (\d+) tool runs", after).group(1)) > \
        int(re.search(r"handed over (\d+) tool runs", served).group(1)), after


def test_server_commands(tmp_path, server_env):
    assert mlirgpu("server", "status", env=server_env).returncode == 3  # none yet
    start = mlirgpu("server", "start", env=server_env)
    assert start.returncode == 0 and "compile server pid" in start.stdout
    assert mlirgpu("server", "stop", env=server_env).stdout.startswith("stopped the compile server (pid ")
    assert status(server_env)[0] is None
    socket_files = [name for name in os.listdir(server_env["MLIRGPU_SERVER_DIR"]) if name.endswith(".sock")]
    assert socket_files == []


def test_an_edit_in_any_subpackage_changes_the_server_and_dask_fingerprints(tmp_path):
    """The compile server is replaced, and Dask workers are matched, by fingerprints of the package's code: both
    walk every subpackage at any depth (one helper, version.code_files), so a module added in a new nested
    subpackage counts as soon as it exists and every edit of it changes both."""
    copy = tmp_path / "pkg"
    shutil.copytree(os.path.join(PACKAGE_ROOT, "mlirgpu"), copy / "mlirgpu",
                    ignore=shutil.ignore_patterns("__pycache__"))
    nested = copy / "mlirgpu" / "extra" / "deeper"
    nested.mkdir(parents=True)
    probe = ("from mlirgpu.execution import dask_fingerprint, rendezvous\n"
             "print(rendezvous.fingerprint(), dask_fingerprint.package_digest())\n")

    def fingerprints():
        run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                             env=dict(os.environ, PYTHONPATH=str(copy)))
        return run.stdout.split()

    before = fingerprints()
    (nested / "mod.py").write_text("VALUE = 1\n")
    added = fingerprints()
    (nested / "mod.py").write_text("VALUE = 22\n")
    edited = fingerprints()
    assert before[0] != added[0] != edited[0] and before[1] != added[1] != edited[1]
    assert fingerprints() == edited  # and nothing else moves them
