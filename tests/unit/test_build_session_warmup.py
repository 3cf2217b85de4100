"""What a build's workers get ready for while SCons reads the build files (BuildSession.expect): LLVM, and the
fork servers of mlir-opt and mlir-translate once a source to compile lowers; nothing for a build whose compiles
are expected in a remote cache. The pool is a recorder here: test_workers checks what a worker does with it."""
from mlirgpu.execution import compiles


class _RecordingPool:
    def __init__(self):
        self.forking = False
        self.prestarts = []

    def prestart(self, count, warm=None):
        self.prestarts.append((count, warm))


def _expect_all(monkeypatch, sources, remote_cache=False):
    pool = _RecordingPool()
    monkeypatch.setattr(compiles, "_POOL", pool)
    session = compiles.BuildSession(lambda: 2, print)
    for path, lowers in sources:
        session.expect(path, remote_cache=remote_cache, lowers=lowers)
    return pool.prestarts


def test_workers_of_a_build_that_lowers_start_the_mlir_tools(monkeypatch):
    assert _expect_all(monkeypatch, [("/a.mlir", True), ("/b.mlir", False), ("/c.mlir", False)]) == \
        [(1, ("mlir-opt", "mlir-translate")), (2, ("mlir-opt", "mlir-translate"))]


def test_workers_of_a_build_of_llvm_dialect_sources_load_llvm_only(monkeypatch):
    """Their sources are cut from the text and translated in the build tool's batches: no tool in the workers."""
    assert _expect_all(monkeypatch, [("/a.mlir", False), ("/b.mlir", True)]) == \
        [(1, ()), (2, ("mlir-opt", "mlir-translate"))]


def test_workers_of_a_build_expecting_a_remote_cache_load_nothing_ahead(monkeypatch):
    assert _expect_all(monkeypatch, [("/a.mlir", True), ("/b.mlir", True)], remote_cache=True) == \
        [(1, None), (2, None)]


def test_which_compiles_run_mlir_opt(tmp_path):
    """A target-neutral file is lowered; a file of targeted LLVM-dialect modules is cut from its text, unless the
    build names a lowering pipeline (it runs on every file, as upstream's mlir-opt runs it)."""
    import os
    import types

    from corpusutil import ROOT
    from mlirgpu.pipeline.scan import runs_mlir_opt

    neutral = os.path.join(ROOT, "tests", "corpus", "vecadd.neutral.mlir")
    targeted = str(tmp_path / "saxpy.nvvm.mlir")
    with open(os.path.join(ROOT, "tests", "corpus", "saxpy.nvvm.mlir"), encoding="utf-8") as template, \
            open(targeted, "w", encoding="utf-8") as concrete:
        concrete.write(template.read().replace("@CHIP@", "sm_80").replace("@O@", "2"))
    piped = types.SimpleNamespace(lowering="-canonicalize")  # checked options hold the pipeline as given
    assert (runs_mlir_opt(neutral, None), runs_mlir_opt(targeted, None), runs_mlir_opt(targeted, piped)) == \
        (True, False, True)
