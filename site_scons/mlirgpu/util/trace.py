"""Build traces in the Chrome trace event format (`--trace FILE`, SCons `GPU_TRACE`), which Perfetto
(ui.perfetto.dev) and chrome://tracing load, as ninjatracing does for Ninja: one complete event ("ph": "X") per
compile and per stage of each job, on the row of the process that ran it (an LLVM worker, a Dask worker's
command), with the stage cache's verdict, module, target, chip and output size as arguments (a compile's: its
jobs and the tool processes it ran).

    {"traceEvents": [{"name": "isa", "cat": "stage", "ph": "X", "ts": µs, "dur": µs, "pid": 1,
                      "tid": worker pid, "args": {"module", "target", "chip", "cache", "bytes"}}, ...],
     "displayTimeUnit": "ms"}

Timestamps are microseconds of the wall clock, so compiles of one build in several processes line up.

A compile holds its events in `Events`: the stage events in columns (a job's module, target and chip once, each
event's numbers in an array), 56 bytes an event instead of the 700 of its dict, which a file of 10,000 modules
held 28 MB of while its jobs ran and sent back to the command (issue 40); the dicts are made when read.
"""
import json
import os
import time
from array import array

from .fsutil import write_atomic


def _size(output):
    if output is None:
        return None
    if isinstance(output, dict):  # the binary stage: its files
        return sum(len(data) for data in output.values())
    return len(output)


def stage_event(job, stage, origin, wall, begun, output):
    """One stage of one job: began at `wall` (time.time()) / `begun` (perf_counter), now ended."""
    return {"name": stage, "cat": "stage", "ph": "X", "ts": int(wall * 1e6),
            "dur": max(1, int((time.perf_counter() - begun) * 1e6)), "tid": os.getpid(),
            "args": {"source": job.source, "module": job.module.name, "target": job.target.name, "chip": job.chip,
                     "cache": {"cached": "hit", "ran": "miss"}.get(origin, origin), "bytes": _size(output)}}


def compile_event(source, jobs, wall, seconds, tools=None):
    """One compile; `tools`: the tool processes it ran, {program: [runs, seconds, path]} (llvm.process's
    statistics), shown as `processes` (their number) and `tools` ({program: runs}): the cost a process start
    adds per source, against upstream's chain of one process per tool."""
    runs = {name: entry[0] for name, entry in sorted((tools or {}).items())}
    return {"name": os.path.basename(source), "cat": "compile", "ph": "X", "ts": int(wall * 1e6),
            "dur": max(1, int(seconds * 1e6)), "tid": os.getpid(),
            "args": {"source": source, "jobs": jobs, "processes": sum(runs.values()), "tools": runs}}


_STAGE_KEYS = ("name", "cat", "ph", "ts", "dur", "tid", "args")
_STAGE_ARGS = ("source", "module", "target", "chip", "cache", "bytes")


class Events:
    """A compile's trace events, in order within each kind: iterating gives each as its dict (the compile's
    own events first, then the stages'). A stage event of `stage_event`'s shape is kept in columns; any other
    is kept as given."""

    def __init__(self, events=()):
        self.whole = []  # the events kept as given: a compile's own
        self._jobs = []  # (source, module, target, chip) of the jobs whose stage events are here, in order
        self._words = []  # per stage event: its stage name and the stage cache's verdict
        self._numbers = array("q")  # per stage event: its job's index in _jobs, ts, dur, tid, bytes (-1: None)
        self.extend(events)

    def extend(self, events):
        for event in events:
            self.add(event)
        return self

    __iadd__ = extend

    def add(self, event):
        args = event.get("args")
        if (tuple(event) != _STAGE_KEYS or event["cat"] != "stage" or event["ph"] != "X"
                or not isinstance(args, dict) or tuple(args) != _STAGE_ARGS
                or not all(isinstance(event[key], int) for key in ("ts", "dur", "tid"))
                or not (args["bytes"] is None or isinstance(args["bytes"], int) and args["bytes"] >= 0)):
            self.whole.append(event)
            return
        job = (args["source"], args["module"], args["target"], args["chip"])
        if not self._jobs or self._jobs[-1] != job:
            self._jobs.append(job)
        self._words += (event["name"], args["cache"])
        self._numbers.extend((len(self._jobs) - 1, event["ts"], event["dur"], event["tid"],
                              -1 if args["bytes"] is None else args["bytes"]))

    def __len__(self):
        return len(self.whole) + len(self._words) // 2

    def __iter__(self):
        yield from self.whole
        numbers = self._numbers
        for index in range(len(self._words) // 2):
            job, ts, dur, tid, size = numbers[5 * index : 5 * index + 5]
            source, module, target, chip = self._jobs[job]
            yield {"name": self._words[2 * index], "cat": "stage", "ph": "X", "ts": ts, "dur": dur, "tid": tid,
                   "args": {"source": source, "module": module, "target": target, "chip": chip,
                            "cache": self._words[2 * index + 1], "bytes": None if size < 0 else size}}

    def __eq__(self, other):
        return isinstance(other, Events) and list(self) == list(other)


def document(events):
    """The trace file's text for `events` (from one or many compiles): rows named by the process that ran
    them, events in time order."""
    rows = sorted({event["tid"] for event in events})
    named = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": f"worker {tid}"}}
             for tid in rows]
    timed = [dict(event, pid=1) for event in sorted(events, key=lambda event: (event["ts"], -event["dur"]))]
    return json.dumps({"traceEvents": named + timed, "displayTimeUnit": "ms"}, indent=0, sort_keys=True) + "\n"


def write_trace(path, events):
    """Write the trace file atomically (a path that cannot take it is write_atomic's CompileError)."""
    write_atomic(path, document(events))
