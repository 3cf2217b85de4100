"""Build traces in the Chrome trace event format (`--trace FILE`, SCons `GPU_TRACE`), which Perfetto
(ui.perfetto.dev) and chrome://tracing load, as ninjatracing does for Ninja: one complete event ("ph": "X") per
compile and per stage of each job, on the row of the process that ran it (an LLVM worker, a Dask worker's
command), with the stage cache's verdict, module, target, chip and output size as arguments (a compile's: its
jobs and the tool processes it ran).

    {"traceEvents": [{"name": "isa", "cat": "stage", "ph": "X", "ts": µs, "dur": µs, "pid": 1,
                      "tid": worker pid, "args": {"module", "target", "chip", "cache", "bytes"}}, ...],
     "displayTimeUnit": "ms"}

Timestamps are microseconds of the wall clock, so compiles of one build in several processes line up.
"""
import json
import os
import time

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
