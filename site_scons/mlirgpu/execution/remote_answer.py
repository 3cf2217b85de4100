"""A Dask worker's answer, checked before anything of it is used.

A worker is another machine: what it returns is data to check, never instructions. An answer is used only when it
has the shape `dask_worker.run_job` gives (each field's type checked), names exactly the files the client planned
for this compile (the object, header and depfile it asked for and the dumps `scan.planned_outputs` names, as
paths relative to the anchor folder the client computed itself: a name such as `D/../../x` is simply not one of
them), and its files hold at most `$MLIRGPU_EXECUTOR_MAX_BYTES` bytes together. Anything else is refused with one
line naming the worker, before a single file is written.
"""
import os

from ..errors import CompileError
from ..util import environment

MAX_BYTES_VARIABLE = "MLIRGPU_EXECUTOR_MAX_BYTES"
DEFAULT_MAX_BYTES = 256 * 2**20
INPUT_FACTOR = 64  # the default limit grows with what was sent: a source with a large blob dumps it a few times
_NUMBER = (int, float)
_ERROR_FIELDS = {"message": (str,), "file": (str, type(None)), "line": (int, type(None)), "fix": (str, type(None)),
                 "detail": (str, type(None))}
_ANSWER_FIELDS = {"returncode": (int,), "stderr": (str,), "files": (dict,), "result": (dict, type(None)),
                  "root": (str,), "worker": (str,), "seconds": _NUMBER, "command_seconds": _NUMBER}


_WORKER_FIX = "check that worker (it must run `mlirgpu worker` with this mlirgpu), or unset MLIRGPU_EXECUTOR"


class _Bad(Exception):
    """What is wrong with an answer, in words that follow 'the Dask worker ... answered', and what to do."""

    def __init__(self, what, fix=_WORKER_FIX):
        super().__init__(what)
        self.fix = fix


def max_bytes(sent):
    """The most bytes an answer's files may hold together: `$MLIRGPU_EXECUTOR_MAX_BYTES`, else 256 MiB or
    INPUT_FACTOR times the `sent` bytes, whichever is larger. A bad setting is an error naming it."""
    return environment.value(MAX_BYTES_VARIABLE) or max(DEFAULT_MAX_BYTES, INPUT_FACTOR * sent)


def checked(answer, where, source, planned, text_files, limit):
    """`answer`, what the worker at `where` returned for a compile of `source`, if it is sound: a failed compile's
    answer needs only the right shape; a successful one must hold exactly the files `planned` (relative paths), as
    bytes of at most `limit` in all, and `text_files` among them must be UTF-8. Else a CompileError, one line."""
    try:
        _check_shape(answer)
        if answer["returncode"] == 0 and not (answer["result"] or {}).get("error"):
            _check_files(answer["files"], planned, text_files, limit)
    except _Bad as bad:
        raise CompileError(f"the Dask worker {where} answered {bad}; nothing of its answer was written", file=source,
                           fix=bad.fix) from None
    return answer


def _is(value, types):
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _check_shape(answer):
    if not isinstance(answer, dict):
        raise _Bad(f"with a {type(answer).__name__}, not a compile's answer")
    for name, types in _ANSWER_FIELDS.items():
        if not _is(answer.get(name), types):
            raise _Bad(f"with a malformed answer (its '{name}' is a {type(answer.get(name)).__name__})")
    if not os.path.isabs(answer["root"]) or os.path.dirname(answer["root"]) == answer["root"]:
        raise _Bad("with a malformed answer (its scratch folder is not a folder's absolute path)")
    for name, data in answer["files"].items():
        if not isinstance(name, str) or not isinstance(data, bytes):
            raise _Bad(f"with a malformed answer (a file named by a {type(name).__name__} holding a "
                       f"{type(data).__name__}, not bytes)")
    _check_result(answer["result"] or {})


def _check_result(result):
    error = result.get("error")
    if error is not None and not (isinstance(error, dict) and
                                  all(_is(error.get(key), types) for key, types in _ERROR_FIELDS.items())):
        raise _Bad("with a malformed error")
    for name in ("warnings", "cache_warnings", "dumps"):
        if not (isinstance(result.get(name, []), list) and all(isinstance(item, str) for item in result.get(name, []))):
            raise _Bad(f"with malformed {name} (not a list of texts)")
    timings, stages = result.get("timings", {}), result.get("stages", {})
    if not (isinstance(timings, dict) and all(isinstance(key, str) and _is(value, _NUMBER)
                                              for key, value in timings.items())):
        raise _Bad("with malformed timings")
    if not (isinstance(stages, dict) and all(isinstance(job, dict) and all(isinstance(state, str)
                                                                            for state in job.values())
                                             for job in stages.values())):
        raise _Bad("with malformed stage origins")
    trace = result.get("trace", [])
    if not (isinstance(trace, list) and all(isinstance(event, dict) and isinstance(event.get("args", {}), dict) and
                                            _plain(event) for event in trace)):
        raise _Bad("with a malformed trace")


def _plain(value, depth=0):
    """Whether `value` is JSON data (what a trace event is), at most 16 levels deep."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return True
    if depth >= 16:
        return False
    if isinstance(value, list):
        return all(_plain(item, depth + 1) for item in value)
    return isinstance(value, dict) and all(isinstance(key, str) and _plain(item, depth + 1)
                                           for key, item in value.items())


def _check_files(files, planned, text_files, limit):
    size = sum(len(data) for data in files.values())
    if size > limit:
        raise _Bad(f"with {size} bytes of files, more than the {limit} allowed ({MAX_BYTES_VARIABLE})",
                   fix=f"raise {MAX_BYTES_VARIABLE} if outputs this large are expected, else {_WORKER_FIX}")
    undeclared = sorted(set(files) - set(planned))
    if undeclared:
        raise _Bad(f"with a file the compile does not write: {undeclared[0][:200]!r}")
    missing = sorted(set(planned) - set(files))
    if missing:
        raise _Bad(f"without the file {missing[0][:200]!r} the compile writes")
    for name in text_files:
        try:
            files[name].decode("utf-8")
        except UnicodeDecodeError:
            raise _Bad(f"with a file {name[:200]!r} that is not UTF-8 text") from None
