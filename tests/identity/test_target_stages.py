"""A target adds a stage of its own (Target.stages): tests/marked_target.py, defined outside the package, puts a
stage after `isa` that writes `<module>.marked.isa`. Its stage runs and is cached as the shared ones are, its
dump is declared (list-outputs, the SCons emitter: a deleted one is rebuilt, `scons -c` removes it), and the
target passes the identity harness of the built-in targets (tests/identity/test_upstream_identity.py), whose oracle
applies because its code generation is NVVM's."""
import json
import os
import subprocess
import sys

from corpusutil import CORPUS, ROOT
from sconsutil import SCONS, TOOLPATH

TESTS = os.path.join(ROOT, "tests")
ENV = dict(os.environ, MLIRGPU_TARGETS="marked_target",
           PYTHONPATH=os.pathsep.join([TESTS, os.path.join(TESTS, "identity"), os.path.join(ROOT, "site_scons")]))
SOURCE = os.path.join(CORPUS, "vecadd.neutral.mlir")
MARK = "// marked by tests/marked_target.py\n"  # marked_target.MARK (imported there only: it registers the target)


def _cli(*args, cwd, env=ENV):
    run = subprocess.run([sys.executable, "-m", "mlirgpu", *args], cwd=cwd, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout


def _origins(folder):
    record = json.loads((folder / "mlirgpu.json").read_text())
    return [job["stages"] for job in record["jobs"]]


def test_the_targets_stage_runs_and_its_dump_is_declared(tmp_path):
    listed = _cli("list-outputs", SOURCE, "-o", "k.o", "--target", "marked", "--chip", "sm_80",
                  "--dump-intermediates", "D", cwd=tmp_path).split()
    assert "D/vecadd_neutral.marked.isa" in listed
    assert listed.index("D/vecadd_neutral.isa") + 1 == listed.index("D/vecadd_neutral.marked.isa")
    _cli("compile", SOURCE, "-o", "k.o", "--target", "marked", "--chip", "sm_80", "--dump-intermediates", "D",
         cwd=tmp_path)
    dumps = tmp_path / "D"
    assert sorted(os.listdir(dumps)) == sorted(os.path.basename(path) for path in listed[1:])
    isa = (dumps / "vecadd_neutral.isa").read_text()
    assert (dumps / "vecadd_neutral.marked.isa").read_text() == MARK + isa
    assert _origins(dumps)[0]["marked.isa"] == "ran"
    # The stage only writes its dump: the binary is NVVM's, made from the ISA as `isa` wrote it.
    _cli("compile", SOURCE, "-o", "n.o", "--target", "nvvm", "--chip", "sm_80", "--dump-intermediates", "N",
         cwd=tmp_path)
    assert (dumps / "vecadd_neutral.cubin").read_bytes() == (tmp_path / "N" / "vecadd_neutral.cubin").read_bytes()
    assert not (tmp_path / "N" / "vecadd_neutral.marked.isa").exists()


def test_the_targets_stage_is_cached_and_keys_the_next_by_its_input(tmp_path):
    """With the stage cache, format isa stores `isa` and `marked.isa`; a later fatbin compile restores both and
    runs the binary stage from the recomputed ISA (the marked stage neither feeds it nor keys it)."""
    env = dict(ENV, MLIRGPU_CACHE_DIR=str(tmp_path / "cache"))
    common = ("--target", "marked", "--chip", "sm_90")
    _cli("compile", SOURCE, "-o", "i.o", "--format", "isa", *common, "--dump-intermediates", "I", cwd=tmp_path,
         env=env)
    _cli("compile", SOURCE, "-o", "f.o", "--format", "fatbin", *common, "--dump-intermediates", "F", cwd=tmp_path,
         env=env)
    assert _origins(tmp_path / "F") == [{"initial.ll": "cached", "linked.ll": "cached", "opt.ll": "cached",
                                         "isa": "cached", "marked.isa": "cached", "binary": "ran"}]
    _cli("compile", SOURCE, "-o", "c.o", "--format", "fatbin", *common, "--dump-intermediates", "C", cwd=tmp_path,
         env=dict(env, MLIRGPU_CACHE="off"))
    for name in ("vecadd_neutral.marked.isa", "vecadd_neutral.cubin", "vecadd_neutral.fatbin"):
        assert (tmp_path / "F" / name).read_bytes() == (tmp_path / "C" / name).read_bytes(), name


def test_scons_declares_rebuilds_and_cleans_the_targets_dump(tmp_path):
    (tmp_path / "k.mlir").write_text(open(SOURCE).read())
    (tmp_path / "SConstruct").write_text(f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
                                         "env.GpuObject('k', 'k.mlir')\n")

    def scons(*args):
        run = subprocess.run([SCONS, "-Q", "GPU_TARGET=marked", "DUMP=1", *args], cwd=tmp_path, capture_output=True,
                             text=True, env=ENV)
        assert run.returncode == 0, run.stderr
        return run.stdout

    scons()
    marked = tmp_path / "k.dumps" / "vecadd_neutral.marked.isa"
    assert marked.read_text().startswith(MARK)
    assert "up to date" in scons()
    marked.unlink()
    assert "up to date" not in scons()
    assert marked.read_text().startswith(MARK)
    scons("-c")
    assert not marked.exists() and not (tmp_path / "k.o").exists()


# The harness's cases for the marked target: target-neutral corpus files lowered for NVVM, with and without
# host code, at both O levels.
IDENTITY_CASES = [("vecadd.neutral.mlir", "sm_80", 0), ("vecadd.neutral.mlir", "sm_90", 3),
                  ("launch_host.neutral.mlir", "sm_80", 3), ("printf.neutral.mlir", "sm_90", 0),
                  ("rowsum_scf.neutral.mlir", "sm_80", 3)]
_HARNESS = """
import sys, tempfile, pathlib
import marked_target
from test_upstream_identity import assert_matches_upstream
path, chip, level, toolkit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
assert_matches_upstream(path, "nvvm", chip, level, "", (), pathlib.Path(tempfile.mkdtemp(dir=sys.argv[5])),
                        toolkit, ours="marked")
"""


def test_the_target_passes_the_identity_harness(tmp_path, cuda_root):
    """Each case in a process of its own, where the plugin is registered as a build registers it (workers
    import $MLIRGPU_TARGETS when they start); its dumps, marked one among them, are compared with upstream's."""
    for name, chip, level in IDENTITY_CASES:
        run = subprocess.run([sys.executable, "-c", _HARNESS, os.path.join(CORPUS, name), chip, str(level),
                              cuda_root, str(tmp_path)], capture_output=True, text=True, env=ENV, cwd=tmp_path)
        assert run.returncode == 0, f"{name} {chip} O{level}: {run.stderr[-3000:]}"
    isas = sorted(str(path)[:-len(".isa")] for path in tmp_path.glob("*/dumps-*/*.isa")
                  if not path.name.endswith(".marked.isa"))
    marked = sorted(str(path)[:-len(".marked.isa")] for path in tmp_path.glob("*/dumps-*/*.marked.isa"))
    assert marked == isas and len(marked) >= 2 * len(IDENTITY_CASES)  # every job's, with each LLVM backend
