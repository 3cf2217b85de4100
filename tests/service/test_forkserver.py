"""The fork server (mlirgpu.execution.forkserver): a run forked from a tool kept loaded is a fresh run of the tool, with the
folder, arguments, environment, streams and exit status its caller gave; it refuses what it cannot do without
going away, and ends after its last run once its owner lets it go. Checked on a probe program compiled here and
on the real mlir-translate, each against a fresh process."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from mlirgpu.execution import forkserver
from mlirgpu.llvm import process, toolchain

PROBE = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* argv[1]: exit:N or signal:N; echoes its folder, arguments, $PROBE and stdin, says something on stderr */
int main(int argc, char **argv) {
    char folder[4096], input[4096];
    printf("cwd=%s\n", getcwd(folder, sizeof folder) ? folder : "?");
    for (int i = 1; i < argc; i++) printf("arg=%s\n", argv[i]);
    printf("PROBE=%s\n", getenv("PROBE") ? getenv("PROBE") : "(unset)");
    size_t n = fread(input, 1, sizeof input, stdin);
    printf("stdin=%.*s\n", (int)n, input);
    fprintf(stderr, "probe: to stderr\n");
    fflush(stdout);
    if (argc > 1 && strncmp(argv[1], "signal:", 7) == 0) raise(atoi(argv[1] + 7));
    return argc > 1 && strncmp(argv[1], "exit:", 5) == 0 ? atoi(argv[1] + 5) : 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The preload library and the probe program, built in a folder of this module's own."""
    folder = tmp_path_factory.mktemp("forkserver")
    preload, reason = forkserver.library(str(folder))
    assert preload, reason
    (folder / "probe.c").write_text(PROBE)
    subprocess.run(["cc", "-O1", "-o", str(folder / "probe"), str(folder / "probe.c")], check=True)
    return preload, str(folder / "probe")


@pytest.fixture
def probe_server(built):
    preload, probe = built
    server = forkserver.ForkServer(probe, preload)
    yield server, probe
    server.close()


def _forked(server, argv, folder, environment, input=b""):
    """A forked run's (exit code, stdout, stderr), read as mlirgpu.llvm.process reads a handed-over run."""
    pid, fds = server.run(argv, folder, environment)
    ran = process._Prestarted.received(argv, pid, fds).communicate(argv, input, 30)
    return ran.returncode, ran.stdout, ran.stderr


def _fresh(argv, folder, environment, input=b""):
    ran = subprocess.run(argv, cwd=folder, env=environment, input=input, capture_output=True, timeout=30)
    return ran.returncode, ran.stdout, ran.stderr


@pytest.mark.parametrize("how", ["exit:0", "exit:3", "signal:11", "signal:6"])
def test_a_forked_run_is_a_fresh_run(tmp_path, probe_server, how):
    server, probe = probe_server
    environment = {"PROBE": "a value with spaces and = signs", "PATH": os.environ["PATH"]}
    argv = [probe, how, "two words", ""]
    forked = _forked(server, argv, str(tmp_path), environment, b"some input\n")
    fresh = _fresh(argv, str(tmp_path), environment, b"some input\n")
    assert forked == fresh
    assert f"cwd={tmp_path}\n".encode() in forked[1] and b"arg=two words\n" in forked[1]
    assert forked[0] == {"exit:0": 0, "exit:3": 3, "signal:11": -11, "signal:6": -6}[how]


@pytest.mark.parametrize("bind_now", [True, False])
def test_a_run_gets_the_callers_environment_whichever_way_the_server_binds(tmp_path, built, bind_now):
    """A fork server that resolved every symbol at load (LD_BIND_NOW, its own setting) gives its runs the
    caller's environment, as a fresh run has it: `env` forked prints what `env` run prints."""
    preload, _probe = built
    program = os.path.realpath(shutil.which("env"))
    server = forkserver.ForkServer(program, preload, bind_now)
    try:
        environment = {"PROBE": "x", "PATH": os.environ["PATH"]}
        forked = _forked(server, [program], str(tmp_path), environment)
        assert forked == _fresh([program], str(tmp_path), environment)
        assert b"PROBE=x\n" in forked[1] and b"LD_" not in forked[1] and b"MLIRGPU" not in forked[1]
    finally:
        server.close()


def test_runs_do_not_see_each_other(tmp_path, probe_server):
    """Each run forks from the state before main: one run's environment and folder are not the next one's."""
    server, probe = probe_server
    first = _forked(server, [probe], str(tmp_path), {"PROBE": "first"})
    second = _forked(server, [probe], "/", {})
    assert b"PROBE=first" in first[1] and b"PROBE=(unset)" in second[1] and b"cwd=/\n" in second[1]


def test_a_folder_that_cannot_be_entered_is_said_with_status_127(tmp_path, probe_server):
    server, probe = probe_server
    code, stdout, stderr = _forked(server, [probe], str(tmp_path / "missing"), {})
    assert code == 127 and stdout == b""
    assert f"{probe}: cannot enter {tmp_path / 'missing'}".encode() in stderr


def test_a_request_too_large_is_left_to_the_caller_and_the_server_stays(tmp_path, probe_server):
    server, probe = probe_server
    assert server.run([probe], str(tmp_path), {"BIG": "x" * (forkserver.MAX_REQUEST + 1)}) is None
    assert server.run([probe], str(tmp_path), {"BIG": "x" * 400_000}) is None  # more than the socket takes
    assert server.run([probe, "a\0b"], str(tmp_path), {}) is None  # no C string holds it
    assert server.ready
    assert b"stdin=\n" in _forked(server, [probe], str(tmp_path), {})[1]


def test_a_run_that_would_load_differently_is_left_to_the_caller(tmp_path, probe_server):
    """LD_LIBRARY_PATH, LD_PRELOAD or glibc's tunables in a run's environment (and not in the fork server's)
    would change what a fresh process loads: such a run is not forked."""
    server, probe = probe_server
    for variable in ("LD_LIBRARY_PATH", "LD_PRELOAD", "GLIBC_TUNABLES"):
        assert server.run([probe], str(tmp_path), {variable: str(tmp_path)}) is None
    assert _forked(server, [probe], str(tmp_path), {"PATH": "/bin"})[0] == 0  # and the server serves on


def test_exit_statuses_arrive_when_the_starting_process_ignores_sigchld(tmp_path, built):
    """An ignored SIGCHLD is inherited across exec and would make the kernel reap the runs unreported."""
    preload, probe = built
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        server = forkserver.ForkServer(probe, preload)
    finally:
        signal.signal(signal.SIGCHLD, previous)
    try:
        assert _forked(server, [probe, "exit:3"], str(tmp_path), {})[0] == 3
    finally:
        server.close()


def test_a_killed_fork_server_is_closed(tmp_path, probe_server):
    server, probe = probe_server
    assert _forked(server, [probe], str(tmp_path), {})[0] == 0
    os.kill(server.pid, signal.SIGKILL)
    assert server.run([probe], str(tmp_path), {}) is None
    assert not server.ready and _ends(server)


def test_a_stuck_fork_server_costs_the_caller_a_bounded_wait(tmp_path, probe_server, monkeypatch):
    server, probe = probe_server
    monkeypatch.setattr(forkserver, "ANSWER_SECONDS", 0.5)
    assert _forked(server, [probe], str(tmp_path), {})[0] == 0
    os.kill(server.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        assert server.run([probe], str(tmp_path), {}) is None
        assert time.monotonic() - started < 5 and not server.ready
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert _ends(server)  # closed: it ends once it runs again


def test_a_closed_fork_server_reports_its_runs_in_flight_then_ends(tmp_path, probe_server):
    server, probe = probe_server
    pid, fds = server.run([probe, "exit:5"], str(tmp_path), {})
    waiting = process._Prestarted.received([probe], pid, fds)  # blocked on its stdin
    server.close()
    time.sleep(0.2)
    assert not server.reap()  # the run in flight keeps it
    assert waiting.communicate([probe], b"late", 30).returncode == 5
    assert _ends(server)


def _ends(server):
    """Whether the fork server ends within 10 s (a process's socket closes a moment before it can be reaped)."""
    deadline = time.monotonic() + 10
    while not server.reap():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_only_dynamically_linked_programs_are_served(tmp_path, built):
    _preload, probe = built
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    static = tmp_path / "static"
    subprocess.run(["cc", "-static", "-o", str(static), "-x", "c", "-"], input=b"int main(void){return 0;}",
                   check=True)
    assert forkserver.is_dynamic_program(probe)
    assert forkserver.is_dynamic_program(toolchain.llvm_tool("mlir-translate"))
    assert not forkserver.is_dynamic_program(str(script))
    assert not forkserver.is_dynamic_program(str(static))
    assert not forkserver.is_dynamic_program(str(tmp_path / "missing"))


def test_the_loadable_tools_are_the_dynamically_linked_programs_found(tmp_path, monkeypatch):
    """What the compile server (and a worker no server supplies) keeps fork servers of: each tool found that is
    a dynamically linked program, by its real path; a wrapper script or a missing tool is left to start per run."""
    real_opt, real_translate = (os.path.realpath(toolchain.llvm_tool(name)) for name in ("mlir-opt", "mlir-translate"))
    assert forkserver.loadable(("mlir-translate",)) == {"mlir-translate": real_translate}
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "mlir-opt").symlink_to(real_opt)
    (bin_folder / "mlir-translate").write_text(f'#!/bin/sh\nexec "{real_translate}" "$@"\n')
    (bin_folder / "mlir-translate").chmod(0o755)
    monkeypatch.setattr(toolchain, "DEBIAN_LLVM_BIN", str(tmp_path / "nowhere"))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("MLIR_BIN", str(bin_folder))
    monkeypatch.setenv("LLVM_BIN", str(tmp_path / "nowhere"))
    assert forkserver.loadable() == {"mlir-opt": real_opt}  # the searches are remembered per environment


def test_a_compiler_that_fails_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", "false")
    preload, reason = forkserver.library(str(tmp_path))
    assert preload is None and reason.startswith("false failed on forkserver.c")
    assert os.listdir(tmp_path) == []  # no partial library left behind


MODULE = """module attributes {{llvm.data_layout = ""}} {{
  llvm.func @k(%a: !llvm.ptr, %b: i32) attributes {{nvvm.kernel}} {{
    %c = llvm.add %b, %b : i32
    llvm.store %c, %a : i32, !llvm.ptr
    {last}
  }}
}}
"""


@pytest.mark.parametrize("last", ["llvm.return", "llvm.bogus", "llvm.return %b : i32"])
def test_mlir_translate_forked_is_mlir_translate(tmp_path, built, last):
    """The real tool: the same LLVM IR, the same diagnostics and exit codes as a fresh mlir-translate."""
    preload, _probe = built
    from mlirgpu.llvm import mlirtools

    argv = mlirtools.translate_argv()
    server = forkserver.ForkServer(os.path.realpath(argv[0]), preload)
    try:
        text = MODULE.format(last=last).encode()
        environment = dict(os.environ)
        forked = _forked(server, argv, str(tmp_path), environment, text)
        assert forked == _fresh(argv, str(tmp_path), environment, text)
        assert (forked[0] == 0) == (last == "llvm.return")
        assert server.forks_at == "parse"
    finally:
        server.close()


LOWERABLE = """func.func @f(%a: i32) -> i32 {
  %b = arith.addi %a, %a : i32
  return %b : i32
}
"""


@pytest.mark.parametrize("how", ["lowering", "stdin", "unknown option", "bad input", "help", "missing file"])
def test_mlir_opt_forked_at_its_parse_is_mlir_opt(tmp_path, built, how):
    """mlir-opt's fork server forks after main has registered every dialect and pass, at the command-line parse:
    each run still says, prints and exits as a fresh mlir-opt given its arguments does, its program name
    included (`--help` and the unknown-option message name it)."""
    preload, _probe = built
    program = toolchain.llvm_tool("mlir-opt")
    (tmp_path / "f.mlir").write_text(LOWERABLE)
    (tmp_path / "bad.mlir").write_text(LOWERABLE.replace("arith.addi", "arith.nosuchop"))
    argv, text = {
        "lowering": ([program, "f.mlir", "--pass-pipeline=builtin.module(convert-arith-to-llvm, convert-func-to-llvm)",
                      "--mlir-print-debuginfo"], b""),
        "stdin": ([program, "-", "--canonicalize", "--mlir-disable-threading"], LOWERABLE.encode()),
        "unknown option": ([program, "--no-such-option", "f.mlir"], b""),
        "bad input": ([program, "bad.mlir"], b""),
        "help": ([program, "--help"], b""),
        "missing file": ([program, "missing.mlir"], b""),
    }[how]
    server = forkserver.ForkServer(os.path.realpath(program), preload)
    try:
        environment = dict(os.environ)
        forked = _forked(server, argv, str(tmp_path), environment, text)
        assert forked == _fresh(argv, str(tmp_path), environment, text)
        assert server.forks_at == "parse"
        assert (forked[0] == 0) == (how in ("lowering", "stdin", "help"))
        if how == "lowering":
            assert b"llvm.func @f" in forked[1] and b'loc("f.mlir":' in forked[1]
    finally:
        server.close()


NVPTX_IR = b'target triple = "nvptx64-nvidia-cuda"\ndefine void @k(ptr %p) {\n  store i32 1, ptr %p\n  ret void\n}\n'


@pytest.mark.parametrize("tool, args, text", [
    ("llc", ["-O2", "-mcpu=sm_80", "-"], NVPTX_IR),
    ("llc", ["-O2", "-mtriple=x86_64", "-filetype=obj", "-", "-o", "-"],
     NVPTX_IR.replace(b"nvptx64-nvidia-cuda", b"x86_64")),
    ("llc", ["--bogus"], b""),
    ("llvm-mc", ["-triple=x86_64", "-filetype=obj", "-o", "-"], b".text\nnop\n"),
    ("llvm-mc", ["--bogus"], b""),
])
def test_llc_and_llvm_mc_forked_at_their_parse_are_themselves(tmp_path, built, tool, args, text):
    preload, _probe = built
    program = toolchain.llvm_tool(tool)
    server = forkserver.ForkServer(os.path.realpath(program), preload)
    try:
        forked = _forked(server, [program, *args], str(tmp_path), dict(os.environ), text)
        assert forked == _fresh([program, *args], str(tmp_path), dict(os.environ), text)
        assert server.forks_at == "parse" and (forked[0] == 0) == (args != ["--bogus"])
    finally:
        server.close()


def test_a_tool_forked_at_main_where_its_parse_is_not_llvms(tmp_path, built):
    """A program that is not one of LLVM 22's tools (the probe: no LLVM command-line parser to stop at) is
    served from before main even when asked to fork at the parse; ld.lld, which parses its own way, always."""
    preload, probe = built
    server = forkserver.ForkServer(probe, preload, at_parse=True)
    try:
        assert _forked(server, [probe, "exit:4"], str(tmp_path), {})[0] == 4
        assert server.forks_at == "main"
    finally:
        server.close()
    assert forkserver.tool_name("/usr/lib/llvm-22/bin/ld.lld") not in forkserver.FORKED_AT_PARSE
    assert forkserver.tool_name("mlir-opt-22") == forkserver.tool_name("/usr/lib/llvm-22/bin/mlir-opt") == "mlir-opt"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
