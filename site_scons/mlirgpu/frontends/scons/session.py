"""This SCons run: whether it executes actions, how many at once, and its compiles, one build session of
mlirgpu.execution.compiles (workers, translations made ahead, Dask, the report when SCons ends)."""
import sys

import SCons.Script

from ...execution import compiles


def jobs():
    return max(1, SCons.Script.GetOption("num_jobs") or 1)


def will_build():
    """False for runs that execute no action: -c, -n, -q, -h."""
    return not any(SCons.Script.GetOption(option) for option in ("clean", "no_exec", "question", "help"))


def _tell(text):
    sys.stderr.write(f"mlirgpu: {text}\n")


SESSION = compiles.BuildSession(jobs, _tell)
