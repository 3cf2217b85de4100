"""The unit tier starts no process (tests/unit/conftest.py installs this guard for every test there): a unit
test checks the core's own functions on inputs it holds in memory or in its tmp_path, so it runs in seconds,
the same on every machine, with no tool installed. Whatever would start a program or fork this one raises
ProcessStarted instead, naming the call, so a test that needs a tool is moved to the tier that runs tools."""
import os
import subprocess

import _posixsubprocess

# Every way Python starts a process: subprocess (run, Popen, check_output, os.popen: all through
# Popen._execute_child), multiprocessing's spawn and forkserver (_posixsubprocess.fork_exec), its fork start
# method, pty.fork and os.spawn* (os.fork, os.forkpty), and the os module's own exec and spawn calls.
_OS_CALLS = ("fork", "forkpty", "system", "posix_spawn", "posix_spawnp", "execv", "execve", "execl", "execle",
             "execlp", "execlpe", "execvp", "execvpe", "spawnv", "spawnve", "spawnvp", "spawnvpe")
_MOVE = "the unit tier starts no process: move this test to the tier that runs tools (tests/build, ...)"


class ProcessStarted(RuntimeError):
    """A unit test tried to start a process."""


def _refuse(call):
    def refused(*args, **kwargs):
        raise ProcessStarted(f"{call} called: {_MOVE}")

    return refused


def install(monkeypatch):
    """Replace every process-starting call for one test; `monkeypatch` puts the real ones back after it."""
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("subprocess.Popen"))
    monkeypatch.setattr(_posixsubprocess, "fork_exec", _refuse("_posixsubprocess.fork_exec"))
    for name in _OS_CALLS:
        if hasattr(os, name):
            monkeypatch.setattr(os, name, _refuse(f"os.{name}"))
