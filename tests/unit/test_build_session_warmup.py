"""What a build's workers get ready for while SCons reads the build files (BuildSession.expect): LLVM, and the
fork servers of the tools the sources' compiles run (mlir-opt and mlir-translate once one lowers, a target's own
binary tools, llc), told to workers started before a source needing them too; nothing for a build whose compiles
are expected in a remote cache. The pool is a recorder here: test_workers checks what a worker does with it."""
from mlirgpu.execution import compiles


class _RecordingPool:
    def __init__(self):
        self.forking = False
        self.prestarts = []

    def prestart(self, count, warm=None):
        self.prestarts.append((count, warm))

    def warm_started(self, tools):
        self.prestarts.append(("started", tools))


def _expect_all(monkeypatch, sources, remote_cache=False):
    pool = _RecordingPool()
    monkeypatch.setattr(compiles, "_POOL", pool)
    session = compiles.BuildSession(lambda: 2, print)
    for path, tools in sources:
        session.expect(path, remote_cache=remote_cache, tools=tools)
    return pool.prestarts


LOWERS = ("mlir-opt", "mlir-translate")


def test_workers_of_a_build_that_lowers_start_the_mlir_tools(monkeypatch):
    assert _expect_all(monkeypatch, [("/a.mlir", LOWERS), ("/b.mlir", ()), ("/c.mlir", LOWERS)]) == \
        [(1, LOWERS), (2, LOWERS)]


def test_workers_of_a_build_of_llvm_dialect_sources_load_llvm_only(monkeypatch):
    """Their sources are cut from the text and translated in the build tool's batches: no tool in the workers,
    until a source whose compile runs one; the worker started before it gets that tool then, not again later."""
    assert _expect_all(monkeypatch, [("/a.mlir", ()), ("/b.mlir", ("ld.lld", "llvm-mc")),
                                     ("/c.mlir", ("ld.lld", "llvm-mc")), ("/d.mlir", ("llc", "llvm-mc"))]) == \
        [(1, ()), ("started", ("ld.lld", "llvm-mc")), (2, ("ld.lld", "llvm-mc")), ("started", ("llc",))]


def test_workers_of_a_build_expecting_a_remote_cache_load_nothing_ahead(monkeypatch):
    assert _expect_all(monkeypatch, [("/a.mlir", LOWERS), ("/b.mlir", LOWERS)], remote_cache=True) == \
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


def test_which_tools_a_compile_runs_by_its_targets(tmp_path):
    """The scan's modules' targets name their binary tools (ROCDL: llvm-mc and ld.lld; NVVM's ptxas and fatbinary
    are not LLVM's, and get no fork server), with the release llc that may generate a large module's ISA; a
    target-neutral file lowers, with the build's target."""
    import os
    import types

    from corpusutil import ROOT
    from mlirgpu.llvm import backend
    from mlirgpu.pipeline.scan import tools_run

    llc = ("llc",) if backend.may_run_llc() else ()
    sources = {}
    for name in ("saxpy.nvvm.mlir", "saxpy.rocdl.mlir"):
        with open(os.path.join(ROOT, "tests", "corpus", name), encoding="utf-8") as template:
            sources[name] = tmp_path / name
            sources[name].write_text(template.read().replace("@CHIP@", "gfx90a" if "rocdl" in name else "sm_80")
                                     .replace("@O@", "2"))
    neutral = os.path.join(ROOT, "tests", "corpus", "vecadd.neutral.mlir")
    build = types.SimpleNamespace(lowering="", target="rocdl")
    assert tools_run(str(sources["saxpy.nvvm.mlir"]), None) == llc
    assert tools_run(str(sources["saxpy.rocdl.mlir"]), None) == tuple(sorted(("ld.lld", "llvm-mc") + llc))
    assert tools_run(neutral, build) == tuple(sorted(("ld.lld", "llvm-mc", "mlir-opt", "mlir-translate") + llc))
