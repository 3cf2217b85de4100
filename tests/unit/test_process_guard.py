"""The unit tier's guard fires (tests/process_guard.py, installed by tests/unit/conftest.py): every way of
starting a process raises ProcessStarted here. Each call is one that, unguarded, would do nothing harmful and
visibly not raise ProcessStarted: a program that does not exist (FileNotFoundError), `true`, a child that exits
at once, so a guard that stopped working fails these tests instead of forking the test run."""
import multiprocessing
import os
import subprocess
import sys

import pytest

from process_guard import ProcessStarted

NOWHERE = "/nonexistent/program-the-guard-refuses"


@pytest.mark.parametrize("start", [
    lambda: subprocess.run([NOWHERE]),
    lambda: subprocess.Popen([NOWHERE]),
    lambda: subprocess.check_output([NOWHERE]),
    lambda: subprocess.run("true", shell=True),
    lambda: os.popen("true").read(),
    lambda: os.system("true"),
    lambda: os.posix_spawn(NOWHERE, [NOWHERE], {}),
    lambda: os.posix_spawnp(NOWHERE, [NOWHERE], {}),
    lambda: os.execv(NOWHERE, [NOWHERE]),
    lambda: os.execvp(NOWHERE, [NOWHERE]),
    lambda: os.execl(NOWHERE, NOWHERE),
    lambda: os.spawnv(os.P_WAIT, NOWHERE, [NOWHERE]),
], ids=["run", "Popen", "check_output", "shell", "popen", "system", "posix_spawn", "posix_spawnp", "execv",
        "execvp", "execl", "spawnv"])
def test_starting_a_program_raises(start):
    with pytest.raises(ProcessStarted, match="the unit tier starts no process"):
        start()


def test_forking_raises():
    with pytest.raises(ProcessStarted, match=r"os\.fork called"):
        if os.fork() == 0:  # unguarded: the child leaves at once, and the parent sees no ProcessStarted
            os._exit(0)


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_raises_with_every_start_method(method):
    process = multiprocessing.get_context(method).Process(target=sys.exit)
    with pytest.raises(ProcessStarted):
        process.start()


def test_the_real_calls_come_back_after_the_test(monkeypatch):
    """The guard is a monkeypatch of the test's own: undone, the real functions are there again."""
    guarded = subprocess.Popen._execute_child, os.fork
    monkeypatch.undo()
    assert (subprocess.Popen._execute_child, os.fork) != guarded
    assert subprocess.Popen._execute_child.__module__ == "subprocess" and os.fork.__module__ == "posix"
