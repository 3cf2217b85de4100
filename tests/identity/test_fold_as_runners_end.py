"""A file of many modules: the compile's process folds each stage runner's job results as that runner ends, in
job order, not all of them after the last runner (issue 40: at 10,000 modules the results held until the end,
their trace events above all, were 45 MB of the compile's peak)."""
import os
import sys

from corpusutil import ROOT
from mlirgpu import CompileOptions
from mlirgpu.execution import fanout
from mlirgpu.pipeline import driver, stagerunner
from mlirgpu.pipeline.planning import check_options

sys.path.insert(0, os.path.join(ROOT, "bench"))
from many_modules import write_many  # noqa: E402 - the benchmark's generator


def test_each_runners_results_are_folded_as_it_ends(tmp_path, cuda_root, monkeypatch):
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    monkeypatch.setenv("MLIRGPU_COMPILE_PROCESSES", "2")
    source = write_many(str(tmp_path / "many.mlir"), fanout.MIN_JOBS * 4)  # 8 chunks of 32 jobs
    options = check_options(source, CompileOptions(format="isa", toolkit=cuda_root))
    started, folded = [], []  # chunks started; the chunks started when each job was folded
    real_start, real_fold = fanout._Fan._start, stagerunner.Compile.fold
    monkeypatch.setattr(fanout._Fan, "_start",
                        lambda self, index, chunk: started.append(index) or real_start(self, index, chunk))
    monkeypatch.setattr(stagerunner.Compile, "fold",
                        lambda self, job, result: folded.append((job.id, len(started))) or real_fold(self, job, result))
    result = driver.compile_to_object(source, str(tmp_path / "many.o"), options, runner=fanout.FORKED)
    assert len(started) == 8
    assert [job for job, _started in folded] == [job.id for job in result.jobs], "not folded once each, in order"
    assert folded[0][1] <= 3, "the first runner's results waited for the last runner to start"
    assert max(count for job, count in folded if int(job) < 32 * 4) < 8, "results held until every runner ran"
    assert sum(event["cat"] == "stage" for event in result.trace) == 4 * len(result.jobs)
