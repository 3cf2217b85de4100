"""The benchmark runs end to end in its quick form (no timing is asserted: timings belong to bench/, not CI)."""
import json
import os
import subprocess
import sys

from corpusutil import ROOT


def test_quick_benchmark_produces_every_section(tmp_path):
    run = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "run.py"), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results) >= {"full", "latency", "null", "incremental", "profile", "ninja", "single", "cutoff",
                            "scons_one_edited", "pipelines_cold", "pipelines_floor", "project_floor",
                            "pip_served", "many_modules"}
    # The pip user's rows ran through the native launcher `mlirgpu --launcher` printed (the server built it).
    assert results["pip_served"]["native"] and results["pip_served"]["command"].startswith("launcher/mlirgpu-")
    assert results["pipelines_cold"]["sources"] == 7 and results["pip_served"]["sources"] == 7
    for key, sources in (("pipelines_floor", 7), ("project_floor", 6)):
        floor = results[key]  # the work both chains do is a part of ours, from the compiles' profiles
        assert floor["sources"] == sources and 0 < floor["tools"] < floor["shared_work"] < floor["ours_cpu"]
        assert floor["upstream_cpu"] > 0
    assert set(results["many_modules"]) == {"100 modules", "1 MiB blob", "1 MiB comment"}
    for value in results["many_modules"].values():
        assert value["ours"]["median"] > 0 and value["upstream"]["peak_pss_kib"] > 0 and value["time_ratio"] > 0
    assert set(results["ninja"]) == {"ninja ours, server warm", "ninja ours, server cold", "ninja ours, in process",
                                     "ninja upstream"}
    cutoff = results["cutoff"]
    assert cutoff["cold: every module"]["modules_run"] == 20 and cutoff["one module edited"]["modules_run"] == 1
    assert cutoff["comment-only edit"]["ran"] == 0
    assert {"ours -j2 DUMP=1", "upstream make -j2", "ours -j2 DUMP=0", "SCons floor -j2 DUMP=1",
            "SCons floor -j2 DUMP=0"} <= set(results["full"])
    for value in results["full"].values():
        assert value["median"] > 0 and value["n"] == 1
    # 10 saxpy sources, each: object, header, record, repro.sh and the four stage dumps of its one ISA-format module.
    assert results["null"]["10"]["targets"] == 80
    assert results["profile"]["stages"]["isa"] > 0 and results["profile"]["tools"]
    text = (tmp_path / "results.txt").read_text()
    assert "ratio ours/upstream -j2" in text and "Ninja-style full build" in text and "Early cutoff" in text
    assert "Upstream-style corpus" in text and "Pip-installed" in text
    assert "Big inputs" in text and "| 100 modules |" in text
