"""The scan cache file (scan.use_cache_file, as the SCons tool keeps it) across processes: entries written by
another version of the scanner are misses."""
import os


def test_scans_stored_by_another_scanner_are_not_reused(tmp_path):
    """The scan cache file names the scanner that wrote it (a hash of its code): entries of another version,
    which may have read a file differently, are misses; this version's are hits. Each run is a process of its own
    that keeps its scans in the file (`use_cache_file`, as the SCons tool does) and saves them as it exits."""
    import hashlib
    import subprocess
    import sys

    from corpusutil import ROOT
    from mlirgpu.cache import store

    (tmp_path / "k.mlir").write_text('gpu.module @k [#nvvm.target<chip = "sm_80">] {\n}\n')
    (tmp_path / "other.mlir").write_text('gpu.module @other [#nvvm.target<chip = "sm_90">] {\n}\n')
    cache = tmp_path / "scans.json"

    def scanned(*names):
        code = ("import sys; from mlirgpu.pipeline import scan; scan.use_cache_file(sys.argv[1]); "
                "print(' '.join(scan.scan_file(name).modules[0].name for name in sys.argv[2:]))")
        run = subprocess.run([sys.executable, "-c", code, str(cache), *names], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons")))
        assert run.returncode == 0, run.stderr
        return run.stdout.split()

    assert scanned("k.mlir", "other.mlir") == ["k", "other"]
    stored = store.read_json(str(cache))
    digest, other = (hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in ("k.mlir", "other.mlir"))
    stored[digest] = stored[other]  # k.mlir's entry says what other.mlir holds: only a reused entry says so
    for identity, reused in ((stored["scanner"], True), ("another scanner", False)):
        store.write_json(str(cache), {**stored, "scanner": identity})
        assert scanned("k.mlir") == (["other"] if reused else ["k"])
