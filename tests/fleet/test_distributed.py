"""Distributed compiles on a real Dask LocalCluster (worker processes, loopback only): an SCons build through
GPU_EXECUTOR writes the same bytes as a local build in another checkout; a worker killed mid-build costs nothing
but time; a worker with another toolchain is refused (the build compiles here, with one warning); an unreachable
scheduler costs one warning per build; a failed remote compile reports what a local one does."""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from corpusutil import CORPUS, ROOT, instantiate
from hostile_cases import CASES, fill, left_files, materialise
from sconsutil import SCONS, make_project

distributed = pytest.importorskip("distributed")  # installed with the project (pyproject dependencies)

SITE = os.path.join(ROOT, "site_scons")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from fleet import comparable  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two worker processes with a stage cache of their own (the client's cache never serves
    their compiles), as `mlirgpu worker` configures them (mlirgpu.execution.dask_worker preloaded)."""
    from distributed import Client, LocalCluster

    worker_cache = str(tmp_path_factory.mktemp("worker-cache"))
    env = {"MLIRGPU_CACHE_DIR": worker_cache, "PYTHONPATH": SITE, "MLIRGPU_SERVER": "off"}
    local = LocalCluster(n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1",
                         dashboard_address=None, worker_dashboard_address=None,
                         preload=["mlirgpu.execution.dask_worker"], env=env)
    client = Client(local, set_as_default=False)
    yield local, client, "dask://" + local.scheduler_address[len("tcp://"):]
    client.close()
    local.close()


def _env(**extra):
    return {**os.environ, "PYTHONPATH": SITE, **extra}


def _scons(path, *args, env=None):
    return subprocess.run([SCONS, "-Q", *args], cwd=path, capture_output=True, text=True, env=env or _env())


def _outputs(path):
    """Every file a build wrote under `path` (relative path -> bytes), as two machines' builds must agree on it
    (bench/fleet.py's `comparable`)."""
    found = {}
    for folder, _dirs, names in os.walk(path):
        if ".sconsign" in folder:
            continue
        for name in names:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, path)
            if name.startswith(".sconsign") or relative.endswith((".mlir", ".ll", "SConstruct")) and "dumps" not in relative:
                continue
            data = comparable(name, open(full, "rb").read())
            if data is not None:
                found[relative] = data
    return found


def _project(path, count=0):
    make_project(path)
    for index in range(count):  # more sources, each its own module (no stage is shared between them)
        text = open(os.path.join(CORPUS, "saxpy.nvvm.mlir")).read().replace("@saxpy_nvvm", f"@saxpy_{index}")
        (path / f"s{index}.mlir").write_text(text.replace("@CHIP@", "sm_80").replace("@O@", "3"))
    if count:
        with open(path / "SConstruct", "a") as handle:
            handle.write(f"for i in range({count}):\n    env.GpuObject(f's{{i}}', f's{{i}}.mlir')\n")
    return path


def test_scons_build_on_the_cluster_is_byte_identical_to_a_local_build(tmp_path, cluster):
    _, client, url = cluster
    remote, local = _project(tmp_path / "remote"), _project(tmp_path / "elsewhere" / "local")
    run = _scons(remote, "DUMP=1", f"GPU_EXECUTOR={url}", env=_env(MLIRGPU_STATS="1"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 compiles, 4 on the Dask cluster" in run.stderr, run.stderr
    remote_warnings = [line for line in run.stderr.splitlines() if "warning:" in line]
    run = _scons(local, "DUMP=1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert remote_warnings == [line for line in run.stderr.splitlines() if "warning:" in line] != []
    ours, theirs = _outputs(remote), _outputs(local)
    assert sorted(ours) == sorted(theirs) and len(ours) > 20
    assert [name for name in ours if ours[name] != theirs[name]] == []
    # The library d.mlir links travelled as bytes: a changed library rebuilds d remotely, with its new content.
    from sconsutil import write_library

    write_library(remote, 5)
    write_library(local, 5)
    for path, extra in ((remote, [f"GPU_EXECUTOR={url}"]), (local, [])):
        run = _scons(path, "DUMP=1", *extra)
        assert run.returncode == 0 and "d.o" in run.stdout, run.stdout + run.stderr
    assert open(remote / "d.o", "rb").read() == open(local / "d.o", "rb").read()


def test_a_worker_killed_mid_build_costs_only_time(tmp_path, cluster):
    _, client, url = cluster
    project = _project(tmp_path / "p", count=10)
    build = subprocess.Popen([SCONS, "-Q", "-j4", f"GPU_EXECUTOR={url}"], cwd=project, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=_env(MLIRGPU_STATS="1"))
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and build.poll() is None and time.monotonic() < deadline:
        busy = [address for address, keys in client.processing().items()
                if any(str(key).startswith("mlirgpu-") for key in keys)]
        if busy:
            pids = client.run(os.getpid, workers=busy[:1])
            killed = pids[busy[0]]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    out, err = build.communicate(timeout=300)
    assert killed, "no compile reached a worker"
    assert build.returncode == 0, out + err
    assert "14 compiles, 14 on the Dask cluster" in err, err
    reference = _project(tmp_path / "q", count=10)
    run = _scons(reference, "-j2")
    assert run.returncode == 0, run.stdout + run.stderr
    ours, theirs = _outputs(project), _outputs(reference)
    assert sorted(ours) == sorted(theirs) and [name for name in ours if ours[name] != theirs[name]] == []
    client.wait_for_workers(2, timeout=60)  # the nanny brings the worker back for the next test


def _odd_toolchain(folder):
    """An MLIR bin folder whose mlir-translate is a wrapper (other bytes: another toolchain fingerprint)."""
    from mlirgpu.llvm import toolchain

    folder.mkdir()
    for name in ("mlir-opt", "mlir-translate"):
        real = toolchain.llvm_tool(name)
        wrapper = folder / name
        wrapper.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n' if name == "mlir-translate" else "")
        if name == "mlir-opt":
            wrapper.unlink()
            wrapper.symlink_to(real)
        wrapper.chmod(0o755)
    return str(folder)


def test_a_worker_of_another_toolchain_is_refused(tmp_path, cluster):
    from distributed import Client, LocalCluster

    from mlirgpu.execution import dask_fingerprint, dask_worker

    with LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None) as scheduler_only, \
            Client(scheduler_only, set_as_default=False) as client:
        odd = _odd_toolchain(tmp_path / "odd-bin")
        worker = subprocess.Popen([sys.executable, "-m", "mlirgpu", "worker", scheduler_only.scheduler_address,
                                   "--nthreads", "1", "--host", "127.0.0.1"],
                                  env=_env(MLIR_BIN=odd, MLIRGPU_CACHE_DIR=str(tmp_path / "odd-cache")),
                                  stderr=subprocess.PIPE, text=True)
        try:
            client.wait_for_workers(1, timeout=60)
            theirs = [fps[""] for fps in client.run(dask_fingerprint.worker_fingerprint).values()]
            assert theirs and theirs[0] != dask_fingerprint.fingerprint()
            # The worker itself refuses a job of another fingerprint.
            job = {"fingerprint": dask_fingerprint.fingerprint(), "toolkit_of": "", "argv": [], "inputs": {}, "cwd": ".",
                   "folders": [], "source": "k.mlir"}
            with pytest.raises(dask_worker.Refused):
                client.submit(dask_worker.run_job, job, pure=False).result(timeout=60)
            # A build sends it nothing: it compiles here, says why once, and writes what a local build writes.
            source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
            url = "dask://" + scheduler_only.scheduler_address[len("tcp://"):]
            runs = [subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / name)],
                                   capture_output=True, text=True, env=_env(MLIRGPU_EXECUTOR=url))
                    for name in ("a.o", "b.o")]
            assert all(run.returncode == 0 for run in runs), runs
            assert "no worker has this toolchain" in runs[0].stderr and theirs[0] in runs[0].stderr
            assert runs[1].stderr == ""  # the verdict holds for a minute, in every process of this cache
            local = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "c.o")],
                                   capture_output=True, text=True, env=_env())
            assert local.returncode == 0
            assert open(tmp_path / "a.o", "rb").read() == open(tmp_path / "c.o", "rb").read()
        finally:
            worker.terminate()
            worker.wait(timeout=30)


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_edit_in_any_subpackage_changes_the_dask_worker_fingerprint(tmp_path):
    """A worker (`mlirgpu worker`) running a copy of the package has the client's fingerprint, as the client
    asks the cluster for it, until a module in a nested subpackage of the copy is edited: then it has another,
    whichever toolkit the client names, and no job of the client's is sent to it."""
    import shutil

    from distributed import Client, LocalCluster

    from mlirgpu.execution import dask_fingerprint

    copy = tmp_path / "install"
    shutil.copytree(os.path.join(SITE, "mlirgpu"), copy / "mlirgpu", ignore=shutil.ignore_patterns("__pycache__"))
    ours = dask_fingerprint.worker_fingerprint()
    with LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None) as scheduler_only, \
            Client(scheduler_only, set_as_default=False) as client:
        worker = subprocess.Popen([sys.executable, "-m", "mlirgpu", "worker", scheduler_only.scheduler_address,
                                   "--nthreads", "1", "--host", "127.0.0.1"],
                                  env=dict(_env(), PYTHONPATH=str(copy)), stderr=subprocess.DEVNULL)
        try:
            client.wait_for_workers(1, timeout=60)
            (before,) = client.run(dask_fingerprint.worker_fingerprint).values()
            module = copy / "mlirgpu" / "pipeline" / "driver.py"
            module.write_text(module.read_text() + "\n# an edit\n")
            (after,) = client.run(dask_fingerprint.worker_fingerprint).values()
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    assert before == ours
    assert after.keys() == ours.keys() and all(after[kind] != ours[kind] for kind in ours)


def test_an_unreachable_scheduler_costs_one_warning_per_build(tmp_path):
    project = make_project(tmp_path / "p")
    url = f"dask://127.0.0.1:{_free_port()}"
    run = _scons(project, "-j2", f"GPU_EXECUTOR={url}", env=_env(MLIRGPU_STATS="1"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr.count(f"the Dask executor {url} is not used") == 1, run.stderr
    assert "4 compiles;" in run.stderr  # none on a cluster
    reference = make_project(tmp_path / "q")
    assert _scons(reference).returncode == 0
    ours, theirs = _outputs(project), _outputs(reference)
    assert [name for name in ours if ours[name] != theirs.get(name)] == []


def test_bad_executor_settings_are_clear_errors(tmp_path):
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    for value in ("http://127.0.0.1:8786", "dask://", "tcp://host:1"):
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o")],
                             capture_output=True, text=True, env=_env(MLIRGPU_EXECUTOR=value))
        assert run.returncode == 1 and not (tmp_path / "k.o").exists()
        assert run.stderr.startswith("mlirgpu: error: MLIRGPU_EXECUTOR=") and "use dask://HOST:PORT" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr


def test_bad_answer_limits_are_clear_errors(tmp_path):
    """MLIRGPU_EXECUTOR_WAIT and MLIRGPU_EXECUTOR_MAX_BYTES that are not numbers of seconds or bytes: one error
    line naming the variable, whether or not the scheduler answers, and nothing written."""
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    url = f"dask://127.0.0.1:{_free_port()}"
    for name, value in (("MLIRGPU_EXECUTOR_WAIT", "inf"), ("MLIRGPU_EXECUTOR_WAIT", "0"),
                        ("MLIRGPU_EXECUTOR_MAX_BYTES", "1e9"), ("MLIRGPU_EXECUTOR_MAX_BYTES", "-1")):
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / "k.o")],
                             capture_output=True, text=True, env=_env(MLIRGPU_EXECUTOR=url, **{name: value},
                                                                      MLIRGPU_CACHE_DIR=str(tmp_path / "cache")))
        assert run.returncode == 1 and not (tmp_path / "k.o").exists(), run.stderr
        assert run.stderr.startswith(f"mlirgpu: error: {name}='{value}'") and run.stderr.count("\n") == 1, run.stderr


def test_a_failed_remote_compile_reports_what_a_local_one_does(tmp_path, cluster):
    _, _, url = cluster
    (tmp_path / "sub").mkdir()
    bad = tmp_path / "sub" / "bad.mlir"
    text = open(os.path.join(CORPUS, "saxpy.nvvm.mlir")).read().replace("@CHIP@", "sm_80").replace("@O@", "3")
    bad.write_text(text.replace("llvm.fadd", "llvm.fadd_typo"))
    messages = []
    for where, extra in (("remote", {"MLIRGPU_EXECUTOR": url}), ("local", {})):
        for source in ("sub/bad.mlir", str(bad)):  # a relative and an absolute path, named as given
            (tmp_path / "k.o").write_bytes(b"stale")
            run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--dump-intermediates",
                                  "D"], cwd=tmp_path, capture_output=True, text=True, env=_env(**extra))
            assert run.returncode == 1 and not (tmp_path / "k.o").exists(), (where, run.stderr)
            messages.append(run.stderr)
    assert messages[:2] == messages[2:], messages
    assert "sub/bad.mlir:" in messages[0] and f"{bad}:" in messages[1]


def test_a_compile_on_the_cluster_removes_the_dumps_it_no_longer_writes(tmp_path, cluster):
    """A dump folder an earlier compile filled: a compile on the cluster that writes fewer dumps (the ISA now, not
    the binary) leaves what a local one leaves, no binary dump of the earlier setting to look current; one that
    fails there leaves no record to describe the dumps, as a local one."""
    _, _, url = cluster
    text = open(os.path.join(CORPUS, "saxpy.rocdl.mlir")).read().replace("@CHIP@", "gfx942").replace("@O@", "3")
    folders = {}
    for where, extra in (("remote", {"MLIRGPU_EXECUTOR": url}), ("local", {})):
        work = tmp_path / where
        work.mkdir()
        (work / "k.mlir").write_text(text)
        for format_ in ("bin", "isa"):
            run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", "k.mlir", "-o", "k.o", "--format", format_,
                                  "--dump-intermediates", "D"], cwd=work, capture_output=True, text=True, timeout=120,
                                 env=_env(**extra))
            assert run.returncode == 0 and "not used" not in run.stderr, (where, run.stderr)
        folders[where] = sorted(os.listdir(work / "D"))
        (work / "k.mlir").write_text(text.replace("llvm.fadd", "llvm.fadd_typo"))
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", "k.mlir", "-o", "k.o", "--dump-intermediates",
                              "D"], cwd=work, capture_output=True, text=True, timeout=120, env=_env(**extra))
        assert run.returncode == 1 and not (work / "D" / "mlirgpu.json").exists(), (where, run.stderr)
    assert not any(name.endswith(".hsaco") for name in folders["local"]), folders
    assert folders["remote"] == folders["local"]


def test_served_compiles_on_the_cluster_match_in_process_ones(tmp_path, cluster):
    """`mlirgpu compile` through the compile server with MLIRGPU_EXECUTOR: the outputs, messages and exit codes of
    an in-process compile (a good source and a bad one); the server then keeps the Dask client loaded for the
    commands after the first."""
    _, _, url = cluster
    text = open(os.path.join(CORPUS, "saxpy.nvvm.mlir")).read().replace("@CHIP@", "sm_80").replace("@O@", "3")
    (tmp_path / "server").mkdir(mode=0o700)
    served = {"MLIRGPU_SERVER_DIR": str(tmp_path / "server"), "MLIRGPU_SERVER_IDLE": "60"}
    results = {}
    try:
        for mode in ("off", "on"):
            work = tmp_path / mode
            work.mkdir()
            (work / "good.mlir").write_text(text)
            (work / "bad.mlir").write_text(text.replace("llvm.fadd", "llvm.fadd_typo"))
            runs = [subprocess.run([sys.executable, "-m", "mlirgpu", "compile", name, "-o", name[:-5] + ".o",
                                    "--dump-intermediates", name[:-5] + ".d"], cwd=work, capture_output=True,
                                   text=True, timeout=120, env=_env(MLIRGPU_EXECUTOR=url, MLIRGPU_SERVER=mode, **served))
                    for name in ("good.mlir", "bad.mlir")]
            results[mode] = ([(run.returncode, run.stdout, run.stderr) for run in runs], left_files(work))
        status = subprocess.run([sys.executable, "-m", "mlirgpu", "server", "status"], capture_output=True, text=True,
                                env=_env(**served), timeout=60).stdout
    finally:
        subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=_env(**served), capture_output=True,
                       timeout=60)
    assert [code for code, _out, _err in results["off"][0]] == [0, 1]
    assert results["on"] == results["off"]
    assert "loaded for commands: distributed" in status, status


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_hostile_case_reads_the_same_through_the_cluster(name, tmp_path, cluster):
    """The bad-input table compiled here and through the cluster, in twin folders: the same exit code, the same
    messages, the same files left (none where the compile failed). A case whose settings change this machine's
    toolchain finds no worker of its fingerprint and compiles here, after one warning line saying so."""
    _, _, url = cluster
    case = CASES[name]
    results = {}
    for mode in ("local", "cluster"):
        work = tmp_path / mode / "work"
        work.mkdir(parents=True)
        source = materialise(work, name, case)
        args = [fill(arg, work, source) for arg in case.args]
        if "-o" not in args:
            args = ["-o", "out.o", *args]
        env = _env(**case.env, **({"MLIRGPU_EXECUTOR": url} if mode == "cluster" else {}))
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile",
                              os.path.basename(source) if source.startswith(str(work)) else source, *args],
                             env=env, cwd=work, capture_output=True, text=True, timeout=120)
        stderr = run.stderr.replace(str(tmp_path / mode), "<case>")
        stderr = "".join(line for line in stderr.splitlines(True) if "the Dask executor" not in line)
        results[mode] = (run.returncode, run.stdout, stderr, left_files(work))
    assert results["cluster"] == results["local"]


def test_a_toolkit_named_by_path_becomes_the_workers_own(tmp_path, cluster, cuda_root, rocm_root):
    """--toolkit names a folder of this machine: the worker uses its own toolkit of the same target (the
    fingerprints prove them the same), so such compiles are sent too, with the same bytes as here."""
    _, _, url = cluster
    sources = {"n": ("saxpy.nvvm.mlir", "sm_80", cuda_root), "r": ("multi_kernel.rocdl.mlir", "gfx942", rocm_root)}
    for name, (corpus, chip, toolkit) in sources.items():
        source = instantiate(os.path.join(CORPUS, corpus), tmp_path / f"{name}.mlir", chip, 3)
        profile = tmp_path / f"{name}.jsonl"
        for mode, extra in (("remote", {"MLIRGPU_EXECUTOR": url, "MLIRGPU_PROFILE": str(profile)}), ("local", {})):
            # A cache folder of its own: the executor's failure breaker there is this test's, not one that a test
            # killing the cluster's worker earlier in this process tripped (compiles then stay here, silently).
            run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / f"{name}-{mode}.o"),
                                  "--toolkit", toolkit, "--format", "bin"], capture_output=True, text=True,
                                 env=_env(MLIRGPU_CACHE_DIR=str(tmp_path / "cache"), **extra))
            assert run.returncode == 0 and run.stderr == "", run.stderr
        assert '"remote": true' in profile.read_text()
        assert (tmp_path / f"{name}-remote.o").read_bytes() == (tmp_path / f"{name}-local.o").read_bytes()


HOSTILE_WORKER = '''"""A worker preload for the tests: mlirgpu.execution.dask_worker.run_job replaced by one that answers
as the file named by $MLIRGPU_TEST_HOSTILE says (the client's pickled reference to run_job resolves to this one here)."""
import os
import signal
import time

from mlirgpu.execution import dask_worker

honest = dask_worker.__dict__.setdefault("honest_run_job", dask_worker.run_job)  # preloads may run twice


def run_job(job):
    with open(os.environ["MLIRGPU_TEST_HOSTILE"]) as handle:
        mode = handle.read().strip()
    if mode == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "slow":
        time.sleep(12)
    answer = honest(job)
    files = answer["files"]
    if mode == "escape":
        files["D/../../escaped"] = b"planted"
    elif mode == "extra":
        files["D/extra.txt"] = b"undeclared"
    elif mode == "huge":
        files["D/saxpy_nvvm.isa"] = bytes(2 * 2**20)
    elif mode == "text-file":
        files["k.o"] = "text, not bytes"
    elif mode == "not-a-dict":
        return "nonsense"
    elif mode == "float-exit":
        answer["returncode"] = 0.0
    elif mode == "no-files":
        del answer["files"]
    elif mode == "odd-trace":
        answer["result"]["trace"] = [1]
    elif mode == "odd-depfile":
        files["k.d"] = b"\\xff\\xfe"
    return answer


dask_worker.run_job = run_job
'''


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A scheduler whose one worker (under a nanny, which restarts it) answers as a mode file says: the url and
    the mode file."""
    from distributed import Client, LocalCluster

    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile_worker.py").write_text(HOSTILE_WORKER)
    mode = folder / "mode"
    mode.write_text("honest")
    env = {"MLIRGPU_CACHE_DIR": str(folder / "worker-cache"), "PYTHONPATH": SITE, "MLIRGPU_SERVER": "off",
           "MLIRGPU_TEST_HOSTILE": str(mode)}
    local = LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1",
                         dashboard_address=None, worker_dashboard_address=None,
                         preload=["mlirgpu.execution.dask_worker", str(folder / "hostile_worker.py")], env=env)
    client = Client(local, set_as_default=False)
    yield client, "dask://" + local.scheduler_address[len("tcp://"):], mode
    client.close()
    local.close()


def _hostile_compile(tmp_path, url, *extra, **env):
    """`mlirgpu compile k.mlir -o k.o --dump-intermediates D --depfile k.d` through the cluster at `url`, in
    tmp_path/work whose D/saxpy_nvvm.isa holds b'old': the run and the seconds it took."""
    work = tmp_path / "work"
    (work / "D").mkdir(parents=True)
    (work / "D" / "saxpy_nvvm.isa").write_bytes(b"old")
    instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), work / "k.mlir", "sm_80", 3)
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", "k.mlir", "-o", "k.o", "--dump-intermediates",
                          "D", "--depfile", "k.d", *extra], cwd=work, capture_output=True, text=True, timeout=90,
                         env=_env(MLIRGPU_EXECUTOR=url, MLIRGPU_CACHE_DIR=str(tmp_path / "cache"), **env))
    return run, time.monotonic() - started


@pytest.mark.parametrize("mode", ["escape", "extra", "huge", "text-file", "not-a-dict", "float-exit", "no-files",
                                  "odd-trace", "odd-depfile"])
def test_a_workers_answer_is_checked_before_anything_is_written(mode, tmp_path, hostile, served):
    """A worker that answers with a file outside the compile's planned outputs (`D/../../escaped`), an undeclared
    extra dump, more bytes than MLIRGPU_EXECUTOR_MAX_BYTES, or an answer of the wrong shape: one error line naming
    the worker, no traceback, and nothing of the answer written (the dump there before keeps its bytes)."""
    _, url, mode_file = hostile
    mode_file.write_text(mode)
    run, _ = _hostile_compile(tmp_path, url, MLIRGPU_EXECUTOR_MAX_BYTES=str(2**20), **served)
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("mlirgpu: ") and "Dask worker" in run.stderr, \
        run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "escaped").exists()
    work = tmp_path / "work"
    assert sorted(os.listdir(work)) == ["D", "k.mlir"] and os.listdir(work / "D") == ["saxpy_nvvm.isa"]
    assert (work / "D" / "saxpy_nvvm.isa").read_bytes() == b"old"


def test_an_honest_answer_of_the_hostile_worker_is_written(tmp_path, hostile):
    """The same worker answering honestly: the checks pass and the outputs are a local compile's."""
    _, url, mode_file = hostile
    mode_file.write_text("honest")
    run, _ = _hostile_compile(tmp_path / "remote", url, MLIRGPU_PROFILE=str(tmp_path / "profile.jsonl"))
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert '"remote": true' in (tmp_path / "profile.jsonl").read_text()
    local, _ = _hostile_compile(tmp_path / "local", "local")
    assert local.returncode == 0, local.stderr
    assert left_files(tmp_path / "remote" / "work") == left_files(tmp_path / "local" / "work")


def test_a_worker_killed_mid_job_costs_a_local_compile(tmp_path, hostile, served):
    """The only worker is SIGKILLed while it runs the job (and again when the nanny's new worker gets it): the
    client notices the loss, resubmits once, then compiles here with one warning line, in bounded time."""
    client, url, mode_file = hostile
    mode_file.write_text("die")
    try:
        run, seconds = _hostile_compile(tmp_path / "remote", url, **served)
    finally:
        mode_file.write_text("honest")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("\n") == 1 and "warning:" in run.stderr and "lost" in run.stderr, run.stderr
    assert seconds < 60
    local, _ = _hostile_compile(tmp_path / "local", "local")
    assert left_files(tmp_path / "remote" / "work") == left_files(tmp_path / "local" / "work")
    client.wait_for_workers(1, timeout=60)


def test_a_worker_slower_than_the_wait_costs_a_local_compile(tmp_path, hostile, served):
    """A worker that does not answer within MLIRGPU_EXECUTOR_WAIT seconds: the compile runs here after one
    warning line naming the setting."""
    _, url, mode_file = hostile
    mode_file.write_text("slow")
    try:
        run, seconds = _hostile_compile(tmp_path / "remote", url, MLIRGPU_EXECUTOR_WAIT="2", **served)
    finally:
        mode_file.write_text("honest")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("\n") == 1 and "MLIRGPU_EXECUTOR_WAIT" in run.stderr, run.stderr
    assert seconds < 10
    local, _ = _hostile_compile(tmp_path / "local", "local")
    assert left_files(tmp_path / "remote" / "work") == left_files(tmp_path / "local" / "work")
