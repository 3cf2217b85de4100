"""What the compile's process holds per module stays small (issue 40: peak memory that does not grow with the
number of modules): a heap's freed top goes back to the system, jobs whose stages came the same way
share one origins dict, a spooled binary's reference has no __dict__, and a compile's own read of its source
leaves no scan of it in memory (a translation ahead keeps it for the compile)."""
from mlirgpu import CompileOptions
from mlirgpu.pipeline import scan, spool, stagerunner
from mlirgpu.pipeline.planning import check_options
from mlirgpu.util import heap, trace

SMALL = """\
module attributes {gpu.container_module} {
  gpu.module @m [#nvvm.target<chip = "sm_80">] {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} { llvm.return }
  }
}
"""


def _anonymous_kib():
    with open("/proc/self/smaps_rollup", encoding="ascii") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("Anonymous:"))


def test_a_freed_heap_top_goes_back_to_the_system_after_big_blocks_were_freed():
    """glibc raises its trim threshold to twice the biggest mapped block freed; fixed, a heap's freed top goes back
    as it is freed. The block here is at the top of this thread's heap; in a worker the tools' outputs are read on
    threads, whose arenas' tops malloc_trim never trims."""
    heap.trim_freed_tops()
    big = bytearray(16 << 20)  # a mapped block freed: glibc would raise its trim threshold to 32 MiB
    del big
    before = _anonymous_kib()
    blocks = [bytes(60_000) for _ in range(280)]  # 16 MiB of blocks below the mmap threshold, then freed
    del blocks
    assert _anonymous_kib() - before < 4 << 10


def _fold(compile_, job_id, origins):
    job = type("Job", (), {"id": job_id})()
    compile_.fold(job, stagerunner.JobResult(stagerunner.JobOutput(None, {}), origins, {}, {}, (), {}, (), ()))


def test_jobs_whose_stages_came_the_same_way_share_one_origins_dict(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    source = tmp_path / "s.mlir"
    source.write_text(SMALL)
    options = check_options(str(source), CompileOptions(format="isa"))
    compile_ = stagerunner.Compile(str(source), options, lambda what, where: None, lambda *a: None, None)
    ran, cached = {"initial.ll": "ran", "isa": "ran"}, {"initial.ll": "cached", "isa": "ran"}
    for index, origins in enumerate([ran, dict(ran), cached, dict(ran), dict(cached)]):
        _fold(compile_, str(index), origins)
    assert compile_.origins == {"0": ran, "1": ran, "2": cached, "3": ran, "4": cached}
    assert len({id(origins) for origins in compile_.origins.values()}) == 2
    assert compile_.origins["0"] is not ran  # a copy: the job's own result is not aliased
    assert isinstance(compile_.trace, trace.Events)


def test_a_spooled_reference_holds_no_dict():
    spooled = spool.Spooled("/spool/file", 64, 128)
    assert not hasattr(spooled, "__dict__")
    assert (len(spooled), spooled.offset) == (128, 64)


def test_a_compiles_read_of_its_source_leaves_no_scan_in_memory(tmp_path):
    source = tmp_path / "s.mlir"
    source.write_text(SMALL)
    digest = scan.sourcefile.content_digest(str(source))
    assert scan.direct_source(str(source), None) is not None  # a translation ahead: the compile reads it again
    assert digest in scan._scans.memory
    options = check_options(str(source), CompileOptions(format="isa"))
    assert [module.name for module in scan.direct_source(str(source), options).modules] == ["m"]
    assert digest not in scan._scans.memory
