"""Worker processes, spawned on their own and forked from a zygote (what SCons uses with -j2 and more): same
compiles, distinct processes, and every way a worker can end reported as the spawned one reports it."""
import contextlib
import os
import signal
import threading
import time

import pytest

from corpusutil import ROOT, instantiate
from mlirgpu import CompileOptions, compile_file
from mlirgpu.errors import CompileError
from mlirgpu.execution import processes
from mlirgpu.execution.pool import Pool
from mlirgpu.pipeline.planning import check_options

SOURCE = os.path.join(ROOT, "tests", "corpus", "vecadd.neutral.mlir")
OPTIONS = check_options(SOURCE, CompileOptions(target="nvvm", chip="sm_90", format="isa"))  # as a front end does


@pytest.fixture(params=[False, True], ids=["spawned", "forked"])
def pool(request):
    """A pool of this test's own, starting each worker on its own or forking them from one zygote."""
    workers = Pool()
    workers.forking = request.param
    yield workers
    workers.shutdown()


def test_parallel_compiles_match_and_run_in_distinct_workers(pool):
    reference = compile_file(SOURCE, OPTIONS).object_bytes
    results, pids, parents = [], set(), set()
    barrier = threading.Barrier(3)

    def compile_once():
        with pool.lease() as worker:
            barrier.wait()  # all three leased at once: three processes
            pids.add(worker.process.pid)
            results.append(worker.call("compile_file", SOURCE, OPTIONS).object_bytes)
            pids.add(worker.process.pid)  # a forked worker's pid is known once it has answered
            parents.add(_parent(worker.process.pid))

    threads = [threading.Thread(target=compile_once) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [reference] * 3
    assert len(pids - {None}) == 3 and os.getpid() not in pids
    assert parents == ({pool.zygote.process.pid} if pool.forking else {os.getpid()})


def _parent(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def test_workers_started_by_a_thread_that_ended_live_on(pool):
    """A worker (and a zygote) dies with its parent, and Linux takes the parent to be the thread that started it:
    one started by a short-lived thread (a build's job thread, an API caller's) must not die when that thread
    ends, in the middle of another thread's compile or before this process's own shutdown waits for it."""
    started = {}

    def compile_in_a_thread():
        with pool.lease() as worker:
            worker.call("compile_file", SOURCE, OPTIONS)
            started["worker"] = worker

    thread = threading.Thread(target=compile_in_a_thread)
    thread.start()
    thread.join()
    worker = started["worker"]
    zygote = pool.zygote
    deadline = time.monotonic() + 1  # a kill on the thread's end would have landed by then
    while time.monotonic() < deadline and worker.alive and (zygote is None or zygote.process.poll() is None):
        time.sleep(0.05)
    assert worker.alive and (zygote is None or zygote.process.poll() is None)
    with pool.lease() as again:
        assert again is worker  # the idle one, still serving
        assert again.call("compile_file", SOURCE, OPTIONS).object_bytes
    pool.shutdown()
    assert worker.process.returncode == 0


def test_a_worker_forks_the_llvm_tools_it_runs_from_fork_servers_of_its_own(pool, tmp_path, monkeypatch):
    """Without a compile server a worker keeps llvm-mc and ld.lld (and MLIR's tools) loaded in fork servers of
    its own from their first run; its objects are those of a worker that starts each tool per run (no C
    compiler for the fork servers' library)."""
    source = instantiate(os.path.join(ROOT, "tests", "corpus", "multi_kernel.rocdl.mlir"), tmp_path / "k.mlir",
                         "gfx942", 3)
    monkeypatch.setenv("MLIRGPU_CACHE", "off")  # every compile runs the tools
    objects = {}
    for case, environment in (("per run", {"CC": "false"}), ("forked", {})):
        folder = tmp_path / case.replace(" ", "-")
        folder.mkdir(mode=0o700)
        monkeypatch.setenv("MLIRGPU_SERVER_DIR", str(folder))
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        pool.shutdown()
        with pool.lease() as worker:
            for run in range(2):
                worker.call("compile_to_object", source, str(folder / f"{run}.o"),
                            check_options(source, CompileOptions(format="bin")))
        objects[case] = {(folder / f"{run}.o").read_bytes() for run in range(2)}
        with pool.lease() as worker:
            loaded = sorted(_tool_children(worker.process.pid))
        assert loaded == ([] if case == "per run" else ["lld", "llvm-mc", "mlir-translate"]), loaded
        monkeypatch.delenv("CC", raising=False)
    assert objects["forked"] == objects["per run"] and len(objects["forked"]) == 1


def _tool_children(pid):
    """The programs (by name) of the processes whose parent is `pid`."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _parent_or_none(entry) == pid:
            with contextlib.suppress(OSError):
                yield os.path.basename(os.readlink(f"/proc/{entry}/exe"))


def _parent_or_none(pid):
    try:
        return _parent(pid)
    except OSError:
        return None


def test_killed_worker_reports_its_signal(pool):
    with pool.lease() as worker:
        worker.call("compile_file", SOURCE, OPTIONS)
        os.kill(worker.process.pid, signal.SIGKILL)
        with pytest.raises(CompileError, match=r"LLVM crashed \(signal 9\)"):
            worker.call("compile_file", SOURCE, OPTIONS)
        assert not worker.alive
    with pool.lease() as other:
        assert other is not worker and other.call("compile_file", SOURCE, OPTIONS).object_bytes  # a new one takes over


def test_llvm_pairing_checked_when_llvm_loads(pool, monkeypatch):
    """At a worker's start, or (forked from a build's zygote, which has no LLVM) at its first compile that runs
    LLVM: with the stage cache off, this one does. A cached compile needs no LLVM: its entry's key holds
    llvmlite's identity, so it was made by a compile that passed this check."""
    monkeypatch.setattr(processes, "LLVM_MAJOR", 99)
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    with pytest.raises(CompileError, match=r"bundles LLVM 22, but the MLIR tools are LLVM 99: install the llvmlite "
                                           r"release pinned in pyproject.toml"):
        with pool.lease() as worker:
            worker.call("compile_file", SOURCE, OPTIONS)


def _has_llvm(pid):
    with open(f"/proc/{pid}/maps", encoding="ascii", errors="replace") as maps:
        return "libllvmlite" in maps.read()


def test_a_zygote_leaves_llvm_to_the_compiles_that_need_it(tmp_path, monkeypatch):
    """A build's zygote boots without LLVM (its workers' first compiles wait for that boot): a worker forked from
    it loads LLVM at its first compile that runs a stage, and one whose compile entry is cached never does."""
    monkeypatch.setenv("MLIRGPU_CACHE_DIR", str(tmp_path / "cache"))
    pool = Pool()
    pool.forking = True
    try:
        reference = compile_file(SOURCE, OPTIONS).object_bytes  # the compile entry is made here
        with pool.lease() as worker:
            cached = worker.call("compile_file", SOURCE, OPTIONS)
            assert cached.object_bytes == reference
            assert {how for job in cached.stages.values() for how in job.values()} == {"cached"}
            assert not _has_llvm(worker.process.pid)
            other = worker.call("compile_file", SOURCE, check_options(SOURCE, CompileOptions(target="nvvm", chip="sm_80",
                                                                                             format="isa")))
            assert {how for job in other.stages.values() for how in job.values()} == {"ran"}
            assert _has_llvm(worker.process.pid)
        assert not _has_llvm(pool.zygote.process.pid)
    finally:
        pool.shutdown()


@pytest.mark.parametrize("warm", [None, ("mlir-opt", "mlir-translate"), ("mlir-opt",)],
                         ids=["cold", "warmed", "warmed-twice"])
def test_a_prestarted_worker_gets_ready_while_its_caller_reads_the_build(pool, warm, tmp_path, monkeypatch):
    """A build's workers start while SCons reads the build files; warmed (a build that compiles, and lowers),
    each loads LLVM and starts mlir-opt's and mlir-translate's fork servers before any compile reaches it, and
    its first compile is the same as a cold worker's; also when the second tool comes in a later request (a later
    source's compile runs it), whose answer the compile's call reads first. Forked, the worker has LLVM from its
    zygote, which loaded it once before forking. Not warmed (a build expecting its compiles in a remote cache),
    neither loads anything until a compile needs it."""
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    monkeypatch.setenv("MLIRGPU_SERVER_DIR", str(tmp_path / "server"))
    (tmp_path / "server").mkdir(mode=0o700)
    pool.prestart(1, warm)
    if warm == ("mlir-opt",):
        pool.warm_started(("mlir-translate",))
    worker = pool._idle[0]
    if hasattr(worker.process, "read_pid"):
        worker.process.read_pid()  # a forked worker's pid, the first thing the zygote says
    expected = (True, ["mlir-opt", "mlir-translate"]) if warm else (False, [])
    deadline = time.monotonic() + 20
    while (_has_llvm(worker.process.pid), sorted(_tool_children(worker.process.pid))) != expected:
        assert time.monotonic() < deadline or not warm, "the worker never got ready"
        if not warm and time.monotonic() > deadline - 19:  # a second is plenty to see it does nothing
            break
        time.sleep(0.05)
    assert (_has_llvm(worker.process.pid), sorted(_tool_children(worker.process.pid))) == expected
    if pool.forking:  # warmed, the zygote loaded LLVM once for the workers it forks
        assert _has_llvm(pool.zygote.process.pid) == bool(warm)
    with pool.lease() as leased:
        assert leased is worker
        result = leased.call("compile_file", SOURCE, OPTIONS)
    assert result.object_bytes == compile_file(SOURCE, OPTIONS).object_bytes


def test_workers_end_with_the_caller(pool):
    with pool.lease() as worker:
        worker.call("compile_file", SOURCE, OPTIONS)
        pid = worker.process.pid
    zygote = pool.zygote
    pool.shutdown()
    assert worker.process.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone, not a zombie either: reaped
    if pool.forking:
        assert zygote.process.returncode == 0


@pytest.mark.parametrize("code", [0, 3])
def test_prestarted_tool_reports_its_exit_in_a_process_with_many_descriptors(code, monkeypatch):
    """A prestarted tool's exit status reaches its user whatever descriptor numbers the starting process has
    taken (a busy compile server holds more than ten; POSIX shells read one digit in a redirection)."""
    from mlirgpu.llvm import process

    monkeypatch.setattr(process, "_suppliers", {})  # this test's only: every later /bin/sh runs as usual
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(12)]
    try:
        argv = ["/bin/sh", "-c", f"cat; echo out; echo err >&2; exit {code}"]
        ready = process.prestart(argv)
        assert ready.status > 9
        process.supply(argv[0], lambda asked: ready if asked == argv else None)
        result = process.run(argv, "a prestarted tool", input=b"in\n")
    finally:
        for fd in held:
            os.close(fd)
    assert (result.returncode, result.stdout, result.stderr) == (code, b"in\nout\n", b"err\n")
