"""Build traces (`--trace FILE`, GPU_TRACE): Chrome trace event files that Perfetto and chrome://tracing load,
with one event per stage per job on the row of the process that ran it, and the cache's verdict, module, chip
and sizes as arguments; SCons writes one for the whole build and the HTML report links it."""
import json
import os
import subprocess
import sys

from corpusutil import CORPUS, ROOT, instantiate
from sconsutil import SCONS, make_project

SITE = os.path.join(ROOT, "site_scons")
STAGES = ["initial.ll", "linked.ll", "opt.ll", "isa", "binary"]


def _check_format(document):
    """The trace event format's rules for what we write: complete events and thread-name metadata."""
    assert set(document) == {"traceEvents", "displayTimeUnit"} and document["displayTimeUnit"] == "ms"
    events = document["traceEvents"]
    assert events
    named = {event["tid"] for event in events if event["ph"] == "M"}
    for event in events:
        assert event["ph"] in ("X", "M") and isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["name"], str) and isinstance(event["args"], dict)
        if event["ph"] == "M":
            assert event["name"] == "thread_name" and event["args"]["name"].startswith("worker ")
        else:
            assert isinstance(event["ts"], int) and isinstance(event["dur"], int) and event["dur"] >= 1
            assert event["cat"] in ("compile", "stage") and event["tid"] in named
    return [event for event in events if event["ph"] == "X"]


def test_cli_trace_has_every_stage_of_every_job(tmp_path):
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    for run in (1, 2):  # cold, then every stage from the stage cache
        result = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--trace", "t.json"],
                                cwd=tmp_path, capture_output=True, text=True,
                                # a cache of its own: the first run must miss whatever other tests compiled
                                env={**os.environ, "PYTHONPATH": SITE, "MLIRGPU_CACHE_DIR": str(tmp_path / "cache")})
        assert result.returncode == 0, result.stderr
        events = _check_format(json.loads((tmp_path / "t.json").read_text()))
        compiles = [event for event in events if event["cat"] == "compile"]
        stages = [event for event in events if event["cat"] == "stage"]
        assert len(compiles) == 1 and compiles[0]["args"]["jobs"] == 2
        chips = sorted({event["args"]["chip"] for event in stages})
        assert chips == ["sm_80", "sm_90"]
        for chip in chips:
            mine = [event for event in stages if event["args"]["chip"] == chip]
            assert [event["name"] for event in mine] == STAGES
            assert {event["args"]["cache"] for event in mine} == {"miss" if run == 1 else "hit"}
            assert all(event["args"]["module"] == "vec_scale_multi_nvvm" and event["args"]["target"] == "nvvm"
                       for event in mine)
            assert all(event["args"]["bytes"] > 0 for event in mine)
            assert all(compiles[0]["ts"] <= event["ts"] and event["ts"] + event["dur"] <= compiles[0]["ts"] +
                       compiles[0]["dur"] + 1000 for event in mine)


def test_scons_writes_one_trace_for_the_build_and_the_report_links_it(tmp_path):
    project = make_project(tmp_path / "p")
    run = subprocess.run([SCONS, "-Q", "-j2", "DUMP=1", "GPU_TRACE=build-trace.json", "gpu-artifacts", "."],
                         cwd=project, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    events = _check_format(json.loads((project / "build-trace.json").read_text()))
    sources = {event["args"]["source"] for event in events if event["cat"] == "compile"}
    assert sources == {"a.mlir", "b.mlir", "c.mlir", "d.mlir"}
    jobs = {(event["args"]["source"], event["args"]["module"], event["args"]["chip"]) for event in events
            if event["cat"] == "stage"}
    for job in jobs:
        assert [e["name"] for e in events if e["cat"] == "stage" and
                (e["args"]["source"], e["args"]["module"], e["args"]["chip"]) == job] == STAGES
    assert len({event["tid"] for event in events}) >= 1
    report = (project / "gpu-report.html").read_text() if (project / "gpu-report.html").exists() else \
        next(project.rglob("gpu-report.html")).read_text()
    assert 'href="' in report and "build-trace.json" in report


def test_a_trace_that_cannot_be_written_is_a_clear_error(tmp_path):
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    (tmp_path / "folder").mkdir()
    result = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--trace", "folder"],
                            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SITE})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("mlirgpu: error: cannot write 'folder'") and "(fix: " in result.stderr
    assert not (tmp_path / "k.o").exists()
