"""Running external tools: argument lists only (never a shell), a time limit, and failures as CompileErrors.

The limit is `$MLIRGPU_TOOL_TIMEOUT` seconds (default 600) per tool run. A tool killed by a signal or past the
limit is reported by name; a non-zero exit is returned to the caller, which knows how to read that tool's output.
"""
import contextvars
import os
import re
import signal
import subprocess
import time

from .errors import CompileError

# Per-compile tool statistics {tool: [runs, seconds, path]} while a compile collects them (pipeline.compile_file).
tool_stats = contextvars.ContextVar("mlirgpu_tool_stats", default=None)


MAX_TIMEOUT = 7 * 24 * 3600


class ToolCrashed(CompileError):
    """A tool was killed by a signal (a crash, not a diagnostic): a caller may know another way round."""


def timeout():
    """Seconds a tool may run: `$MLIRGPU_TOOL_TIMEOUT` (default 600), a number from 1 to a week in ASCII
    digits; anything else is an error naming the variable, never a silent default."""
    text = os.environ.get("MLIRGPU_TOOL_TIMEOUT", "600").strip()
    if re.fullmatch(r"[0-9]+(?:\.[0-9]+)?", text) and 1 <= float(text) <= MAX_TIMEOUT:
        return float(text)
    raise CompileError(f"MLIRGPU_TOOL_TIMEOUT='{text[:40]}' is not a number of seconds from 1 to {MAX_TIMEOUT}",
                       fix="set it to e.g. 600, or unset it")


def bounded(argv, seconds, input=None):
    """`subprocess.run(argv)` capturing its output, in its own process group, which is killed whole when the
    time is up (a tool that is a script would otherwise leave a child holding the pipes open)."""
    process = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = process.communicate(input, timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.communicate()
        raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def run(argv, what, *, input=None):
    """Run `argv`; returns the CompletedProcess (bytes) when it exited by itself, else raises CompileError."""
    name = os.path.basename(argv[0])
    started = time.perf_counter()
    try:
        result = bounded(argv, timeout(), input)
    except subprocess.TimeoutExpired as exc:
        raise CompileError(f"{what}: {name} did not finish within {timeout():g} s",
                           fix="set MLIRGPU_TOOL_TIMEOUT to allow longer, or check the tool") from exc
    except OSError as exc:
        raise CompileError(f"{what}: cannot run {argv[0]}: {exc.strerror}") from exc
    stats = tool_stats.get()
    if stats is not None:
        entry = stats.setdefault(name, [0, 0.0, argv[0]])
        entry[0] += 1
        entry[1] += time.perf_counter() - started
    if result.returncode < 0:
        try:
            signame = signal.Signals(-result.returncode).name
        except ValueError:
            signame = f"signal {-result.returncode}"
        output = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
        raise ToolCrashed(f"{what}: {name} crashed ({signame})", fix="see the tool's output with -v",
                           detail=output + "\nrepro: " + " ".join(argv))
    return result
