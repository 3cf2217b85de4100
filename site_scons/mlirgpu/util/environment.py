"""Every MLIRGPU_* environment variable the package reads, in one table (name, kind, default, meaning), and one
parser per kind, so that a value means the same wherever it is read: `MLIRGPU_STATS=off` is off for the command
line, the SCons tool and the server alike, and a value its kind does not take (`MLIRGPU_STATS=maybe`,
`MLIRGPU_TOOL_TIMEOUT=soon`, `MLIRGPU_REMOTE_CACHE_SECRET=` set but empty) is a CompileError naming the variable,
the value and what it takes, never a silent default. docs/reference.md's environment table is checked against
this one (tests/unit/test_docs_reference.py), and no other module reads an MLIRGPU_* variable itself.

A value is parsed when it is asked for (`value(NAME)`), from this process's environment or a given one: the
compile server and the workers take each command's environment with its request, so nothing is kept between
reads, and a read is a dictionary lookup and a few string operations. This module imports only `os` (the
errors module when a value is bad) because the thin client reads MLIRGPU_SERVER before anything else.
"""
import os

BOOLEAN, INTEGER, SECONDS, SIZE, PATH, LIST, TEXT, SECRET = (
    "boolean", "integer", "seconds", "size", "path", "list", "text", "secret")
TRUE_WORDS = ("1", "on", "true", "yes")
FALSE_WORDS = ("0", "off", "false", "no")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
WEEK = 7 * 24 * 3600


class Variable:
    """One row: `default` is a value as a user would write it ('' where there is none, or where the reader works
    it out, as `shown` then says); `low`/`high` bound a number; `unit` names what an integer counts; `internal`
    rows are set by the package for its own processes, not by users."""

    __slots__ = ("name", "kind", "default", "meaning", "shown", "low", "high", "unit", "example", "internal")

    def __init__(self, name, kind, meaning, default="", *, shown="", low=None, high=None, unit="", example="",
                 internal=False):
        self.name, self.kind, self.meaning, self.default, self.shown = name, kind, meaning, default, shown
        self.low, self.high, self.unit, self.example, self.internal = low, high, unit, example or default, internal

    def accepted(self):
        """What a value of this row may be, in words, for the error about one it may not be (the kinds that
        have such values: boolean, integer, seconds, size)."""
        if self.kind == BOOLEAN:
            return "one of " + ", ".join(f"{on}/{off}" for on, off in zip(TRUE_WORDS, FALSE_WORDS))
        if self.kind in (INTEGER, SECONDS):
            unit = self.unit or self.kind
            upper = "" if self.high in (None, float("inf")) else f" to {self.high:g}"
            return f"a number of {unit} from {self.low:g}{upper}"
        return "a size (bytes, or with K, M, G, T)"


TABLE = (
    Variable("MLIRGPU_CACHE", BOOLEAN, "`off`: no stage cache", "on"),
    Variable("MLIRGPU_CACHE_DIR", PATH, "the root of the caches (entries in its `stages/` folder)",
             shown="`$XDG_CACHE_HOME/mlirgpu`"),
    Variable("MLIRGPU_CACHE_SIZE", SIZE, "the cache's size limit (bytes, or with K, M, G, T)", "2G"),
    Variable("MLIRGPU_REMOTE_CACHE", TEXT,
             "the team's stage cache: `redis://[:PASSWORD@]HOST:PORT/DB[?mode=read][&ttl=SECONDS]`"),
    Variable("MLIRGPU_REMOTE_CACHE_PASSWORD", SECRET, "its password, kept out of the URL (set but empty: an error)"),
    Variable("MLIRGPU_REMOTE_CACHE_SECRET", SECRET, "the team's secret: entries are sealed with it, and only entries "
             "sealed with it are read (set but empty: an error, never a cache without a secret)"),
    Variable("MLIRGPU_REMOTE_CACHE_TIMEOUT", SECONDS, "seconds one request may take", "0.5", low=0.001, high=60),
    Variable("MLIRGPU_EXECUTOR", TEXT, "`dask://HOST:PORT`: compile on a Dask cluster (`local`: here)"),
    Variable("MLIRGPU_EXECUTOR_TIMEOUT", SECONDS, "seconds to reach the scheduler", "5", low=0.1, high=3600),
    Variable("MLIRGPU_EXECUTOR_WAIT", SECONDS, "seconds to wait for a remote compile before compiling here", "600",
             low=1, high=WEEK),
    Variable("MLIRGPU_EXECUTOR_MAX_BYTES", INTEGER, "the most bytes a worker's answer may hold",
             shown="256 MiB, or 64 times the bytes sent", low=1, unit="bytes", example="268435456"),
    Variable("MLIRGPU_SERVER", BOOLEAN, "`off`: every command runs in its own process", "on"),
    Variable("MLIRGPU_SERVER_DIR", PATH, "the server's folder (else `/tmp/mlirgpu-<uid>`)",
             shown="`$XDG_RUNTIME_DIR/mlirgpu`"),
    Variable("MLIRGPU_SERVER_IDLE", SECONDS, "seconds a server waits for a request before it exits (at least 1)",
             "600", low=0, high=float("inf")),
    Variable("MLIRGPU_SERVER_TIMEOUT", SECONDS, "seconds a client waits for the server before compiling in its own "
             "process (from 0.1 to a day: `inf` waits a day)", "10", low=0, high=float("inf")),
    Variable("MLIRGPU_TOOL_TIMEOUT", SECONDS, "seconds one tool run may take", "600", low=1, high=WEEK),
    Variable("MLIRGPU_COMPILE_PROCESSES", INTEGER, "processes one compile of many modules keeps busy: mlir-translate "
             "runs over parts of its modules, forked stage runners over chunks of its jobs (`1`: all in turn, in one "
             "process)", shown="the CPUs it may use", low=1, high=1024, unit="processes", example="2"),
    Variable("MLIRGPU_LLVM_BACKEND", TEXT, "which LLVM build generates the ISA: `inprocess` (llvmlite's), `tools` "
             "(the release `llc-22`, a process per module) or `auto` (`llc` for modules from a target's size on)",
             "auto"),
    Variable("MLIRGPU_TARGETS", LIST, "modules defining more targets (comma-separated, importable)"),
    Variable("MLIRGPU_DEBUG", BOOLEAN, "`1`: tracebacks with every internal error (as `-v`)", "off"),
    Variable("MLIRGPU_STATS", BOOLEAN, "`1`: per-stage times after each compile (as `--timings`)", "off"),
    Variable("MLIRGPU_PROFILE", PATH, "a file: one JSON line per compile (stage and tool times, jobs, the most LLVM "
             "modules held at once) and per remote compile (client wait, worker time, bytes)"),
    Variable("MLIRGPU_RESULT_FILE", PATH, "where a Dask worker's compile writes its result", internal=True),
)
ROWS = {row.name: row for row in TABLE}


def value(name, environ=None):
    """`$name` (a row of TABLE) read from `environ` (default: this process's environment) and parsed by its
    kind; unset or empty gives the row's default (None for a number without one, '' for text and paths, no
    entries for a list). Raises CompileError for a value the kind does not take."""
    row = ROWS[name]
    raw = (os.environ if environ is None else environ).get(name)
    if row.kind == SECRET:
        return _secret(row, raw)
    if row.kind == PATH:
        return raw or ""
    text = (raw or "").strip()
    if row.kind == TEXT:
        return text
    if row.kind == LIST:
        return tuple(filter(None, (part.strip() for part in text.split(","))))
    text = text or row.default
    if not text:
        return None
    parsed = _PARSERS[row.kind](row, text)
    if parsed is None:
        from ..errors import CompileError

        raise CompileError(f"{name}='{text[:40]}' is not {row.accepted()}",
                           fix=f"set it to {_example(row)}, or unset it")
    return parsed


def _example(row):
    return "1 or 0" if row.kind == BOOLEAN else f"e.g. {row.example}"


def _secret(row, raw):
    """A secret as it is (never stripped, never shown); set but empty is refused: an unset CI secret expands
    to nothing, and a remote cache then shared without its secret must not pass for one with it."""
    if raw == "":
        from ..errors import CompileError

        raise CompileError(f"{row.name} is set but empty", fix="set it to a secret, or unset it for no secret")
    return raw


def _boolean(_row, text):
    word = text.lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None


def _integer(row, text):
    if text.isascii() and text.isdigit() and row.low <= int(text) <= (row.high or int(text)):
        return int(text)
    return None


def _seconds(row, text):
    """A decimal number of seconds in ASCII (`inf` where the row allows it), within the row's bounds."""
    try:
        seconds = float(text) if text.isascii() and "_" not in text else None
    except ValueError:
        return None
    return seconds if seconds is not None and row.low <= seconds <= row.high else None  # nan fails both


def _size(_row, text):
    """Bytes: a number, optionally with K, M, G or T (and i, B: `2GiB`)."""
    import re  # only when a size is set: the thin client never pays for it

    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)i?B?", text, re.I)
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]) if match else None


_PARSERS = {BOOLEAN: _boolean, INTEGER: _integer, SECONDS: _seconds, SIZE: _size}
