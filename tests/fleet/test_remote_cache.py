"""The remote tier of the stage cache, against a real redis-server on 127.0.0.1: a second machine (another local
cache) gets every stage from the first one's entries with byte-identical outputs; a read-only client stores
nothing; a damaged or foreign value is a miss; a password is honoured; a server that is down or hangs costs one
warning and a bounded time, once per breaker period, and the build goes on; bad settings are clear errors;
SCons's GPU_REMOTE_CACHE reaches the compiles."""
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from corpusutil import CORPUS, instantiate
from redis_server import Redis
from sconsutil import SCONS, make_project

pytestmark = pytest.mark.needs("redis-server", "tools/bootstrap test installs it (Debian package redis-server)")


@pytest.fixture
def redis_server(tmp_path):
    server = Redis(tmp_path)
    yield server
    server.stop()


def mlirgpu(*args, cwd, cache, **env):
    environ = dict(os.environ, MLIRGPU_CACHE_DIR=str(cache), MLIRGPU_SERVER="off", **env)
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=300)


def compile_in(folder, source, cache, **env):
    """Compile `source` into `folder` with every dump; (run, {stem: {stage: ran|cached}}, the dumps' bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    run = mlirgpu("compile", str(source), "-o", "k.o", "--dump-intermediates", "d", "--header", "k.h",
                  cwd=folder, cache=cache, **env)
    if run.returncode:
        return run, None, None
    record = json.loads((folder / "d" / "mlirgpu.json").read_text())
    outputs = {name: (folder / "d" / name).read_bytes() for name in os.listdir(folder / "d") if name != "mlirgpu.json"}
    outputs.update({name: (folder / name).read_bytes() for name in ("k.o", "k.h")})
    return run, {job["stem"]: job["stages"] for job in record["jobs"]}, outputs


def origins(stages):
    return {how for job in stages.values() for how in job.values()}


def test_served_compiles_use_the_remote_cache_and_the_server_keeps_its_client_loaded(tmp_path, redis_server):
    """Through the compile server a second machine's compile gets every stage from Redis, with the outputs of
    an in-process one; the server imports the redis client once, for the commands after the first."""
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    (tmp_path / "server").mkdir(mode=0o700)
    served = {"MLIRGPU_SERVER": "on", "MLIRGPU_SERVER_DIR": str(tmp_path / "server"), "MLIRGPU_SERVER_IDLE": "60"}

    def compile_served(folder, cache, **env):
        folder.mkdir()
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", str(source), "-o", "k.o",
                              "--dump-intermediates", "d", "--header", "k.h"], cwd=folder, capture_output=True,
                             text=True, timeout=300, env=dict(os.environ, MLIRGPU_CACHE_DIR=str(cache), **served, **env))
        assert run.returncode == 0 and run.stderr == "", run.stderr
        record = json.loads((folder / "d" / "mlirgpu.json").read_text())
        outputs = {name: (folder / "d" / name).read_bytes() for name in os.listdir(folder / "d")
                   if name != "mlirgpu.json"}
        outputs.update({name: (folder / name).read_bytes() for name in ("k.o", "k.h")})
        return {how for job in record["jobs"] for how in job["stages"].values()}, outputs

    def status():
        return subprocess.run([sys.executable, "-m", "mlirgpu", "server", "status"], capture_output=True, text=True,
                              env=dict(os.environ, **served), timeout=60).stdout

    try:
        assert compile_served(tmp_path / "plain", tmp_path / "c0", MLIRGPU_CACHE="off")[0] == {"ran"}
        assert "loaded for commands" not in status()
        first = compile_served(tmp_path / "a", tmp_path / "ca", MLIRGPU_REMOTE_CACHE=redis_server.url())
        assert "loaded for commands: redis" in status()
        expected = compile_in(tmp_path / "off", source, tmp_path / "c1", MLIRGPU_CACHE="off")[2]
        assert first == ({"ran"}, expected)
        assert compile_served(tmp_path / "b", tmp_path / "cb", MLIRGPU_REMOTE_CACHE=redis_server.url()) == \
            ({"cached"}, expected)
    finally:
        subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], env=dict(os.environ, **served),
                       capture_output=True, timeout=60)


def test_a_process_keeps_one_connection_per_server_across_compiles(tmp_path, redis_server):
    """A runner of the compile server and its worker serve compile after compile: they keep their client (one
    connection, no handshake per compile), and drop it after a fault."""
    from mlirgpu.cache import remote as remotecache

    connections = lambda: redis_server.client.info("stats")["total_connections_received"]  # noqa: E731
    before = connections()
    said = []  # the compile's warning sink
    for compile_ in range(3):  # each compile makes its own tier, as the stage cache does
        tier = remotecache.RemoteTier(redis_server.url(), str(tmp_path / "breaker"), warn=said.append)
        tier.put(f"key{compile_}", b"payload")
        assert tier.get(f"key{compile_}") == b"payload"
    assert connections() - before == 1
    tier._trip(ConnectionError("lost"))
    assert len(said) == 1 and "failed (lost)" in str(said[0])
    assert not any(key[0] == tier.url for key in remotecache._clients)


def test_many_lookups_are_one_round_trip(tmp_path, redis_server):
    """A stage cache asked for many entries at once (a batch of translations) asks the remote tier once for all
    its local misses, fills its local folder with what it found, and then needs the server no more."""
    from mlirgpu.cache import remote as remotecache
    from mlirgpu.cache.stagecache import StageCache, key

    breaker = str(tmp_path / "breaker")
    keys = [key("probe", index) for index in range(6)]
    first = StageCache(str(tmp_path / "one"), 1 << 30, remotecache.RemoteTier(redis_server.url(), breaker))
    for index, entry in enumerate(keys[:5]):
        first.put(entry, f"payload {index}".encode())
    calls = lambda: {name: value["calls"] for name, value in redis_server.client.info("commandstats").items()}  # noqa: E731
    before = calls()
    other = StageCache(str(tmp_path / "two"), 1 << 30, remotecache.RemoteTier(redis_server.url(), breaker))
    assert other.get_many(keys) == [f"payload {index}".encode() for index in range(5)] + [None]
    after = calls()
    assert after.get("cmdstat_mget", 0) - before.get("cmdstat_mget", 0) == 1
    assert after.get("cmdstat_get", 0) == before.get("cmdstat_get", 0)
    redis_server.stop()
    assert StageCache(str(tmp_path / "two"), 1 << 30).get_many(keys[:5]) == [f"payload {i}".encode() for i in range(5)]


def test_a_second_machine_gets_every_stage_from_the_first(tmp_path, redis_server):
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    reference, _stages, expected = compile_in(tmp_path / "off", source, tmp_path / "c0", MLIRGPU_CACHE="off")
    assert reference.returncode == 0, reference.stderr
    first, stages, outputs = compile_in(tmp_path / "a", source, tmp_path / "ca", MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert origins(stages) == {"ran"} and outputs == expected
    stored = redis_server.client.dbsize()
    assert stored >= 5 * len(stages)  # every stage of every job, and the translations
    second, stages, outputs = compile_in(tmp_path / "b", source, tmp_path / "cb", MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert second.returncode == 0 and second.stderr == "", second.stderr
    assert origins(stages) == {"cached"} and outputs == expected
    assert redis_server.client.dbsize() == stored
    stats = mlirgpu("cache", "stats", cwd=tmp_path, cache=tmp_path / "cb", MLIRGPU_REMOTE_CACHE=redis_server.url())
    remote = stats.stdout.split("remote     ")[1]
    hits, misses = (int(remote.split(f"  {name}")[1].split()[0]) for name in ("hits", "misses"))
    # one compile entry held every stage of every job (and the translations the command looked up ahead)
    assert remote.startswith("redis://127.0.0.1") and hits >= 1 and misses == 0, stats.stdout
    redis_server.stop()  # the remote hits filled the local cache: no server needed any more
    third, stages, outputs = compile_in(tmp_path / "c", source, tmp_path / "cb", MLIRGPU_CACHE="on")
    assert origins(stages) == {"cached"} and outputs == expected and third.stderr == ""


def test_a_read_only_client_stores_nothing(tmp_path, redis_server):
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    run, stages, _outputs = compile_in(tmp_path / "a", source, tmp_path / "ca",
                                       MLIRGPU_REMOTE_CACHE=redis_server.url("mode=read"))
    assert run.returncode == 0 and origins(stages) == {"ran"}, run.stderr
    assert redis_server.client.dbsize() == 0
    run, _stages, _outputs = compile_in(tmp_path / "b", source, tmp_path / "cb",
                                        MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert redis_server.client.dbsize() > 0
    run, stages, _outputs = compile_in(tmp_path / "c", source, tmp_path / "cc",
                                       MLIRGPU_REMOTE_CACHE=redis_server.url("mode=read&ttl=60"))
    assert origins(stages) == {"cached"}  # reading is what a read-only client does


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign"])
def test_a_damaged_remote_entry_is_a_miss(tmp_path, redis_server, damage):
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    _run, _stages, expected = compile_in(tmp_path / "a", source, tmp_path / "ca", MLIRGPU_REMOTE_CACHE=redis_server.url())
    for key in redis_server.client.keys("*"):
        value = redis_server.client.get(key)
        broken = {"truncated": value[: len(value) // 2], "flipped": value[:-1] + bytes([value[-1] ^ 1]),
                  "foreign": b"not an entry of ours"}[damage]
        redis_server.client.set(key, broken)
    run, stages, outputs = compile_in(tmp_path / "b", source, tmp_path / "cb", MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert origins(stages) == {"ran"} and outputs == expected


def test_a_password_is_honoured(tmp_path):
    server = Redis(tmp_path, password="s3cret")
    try:
        source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
        run, stages, _outputs = compile_in(tmp_path / "a", source, tmp_path / "ca",
                                           MLIRGPU_REMOTE_CACHE=server.url(), MLIRGPU_REMOTE_CACHE_PASSWORD="s3cret")
        assert run.returncode == 0 and run.stderr == "" and server.client.dbsize() > 0, run.stderr
        run, stages, _outputs = compile_in(tmp_path / "b", source, tmp_path / "cb",
                                           MLIRGPU_REMOTE_CACHE=f"redis://:s3cret@127.0.0.1:{server.port}/0")
        assert run.returncode == 0 and origins(stages) == {"cached"}, run.stderr
        run, stages, _outputs = compile_in(tmp_path / "c", source, tmp_path / "cc",
                                           MLIRGPU_REMOTE_CACHE=server.url())  # no password: refused
        assert run.returncode == 0 and origins(stages) == {"ran"}
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and "the remote cache redis://127.0.0.1" in lines[0], run.stderr
        assert "s3cret" not in run.stderr
    finally:
        server.stop()


@pytest.mark.parametrize("fault", ["down", "hanging"])
def test_a_server_down_or_hanging_costs_one_warning_and_one_try(tmp_path, fault):
    """Three compiles with the cache's server unreachable: the first tries it once (one timeout), says so in
    one line, and opens the breaker, which spares the other compiles of that cache the try and the warning; every
    output is right."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if fault == "hanging":
        listener.listen(64)  # connections are taken (the kernel's backlog) and never answered
    else:
        listener.close()
    try:
        source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
        _run, _stages, expected = compile_in(tmp_path / "ref", source, tmp_path / "c0", MLIRGPU_CACHE="off")
        url = f"redis://127.0.0.1:{port}/0"
        warnings = []
        for index in range(3):
            run, _stages, outputs = compile_in(tmp_path / f"b{index}", source, tmp_path / "c1",
                                               MLIRGPU_REMOTE_CACHE=url, MLIRGPU_REMOTE_CACHE_TIMEOUT="0.5")
            assert run.returncode == 0 and outputs == expected, run.stderr
            warnings += run.stderr.strip().splitlines()
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith(f"mlirgpu: warning: the remote cache redis://127.0.0.1:{port}/0 failed")
        if fault == "hanging":
            listener.settimeout(0.2)
            tries = 0
            with contextlib.suppress(TimeoutError):
                while True:
                    listener.accept()[0].close()
                    tries += 1
            assert tries == 1
    finally:
        listener.close()


@pytest.mark.parametrize("url, says", [
    ("http://cache:6379/0", "is not a redis:// or rediss:// URL"),
    ("redis://cache:6379/0?mode=write", "mode 'write' is neither read nor readwrite"),
    ("redis://cache:6379/0?ttl=-1", "ttl '-1' is not a number of seconds"),
    ("redis://cache:6379/0?color=blue", "unknown setting 'color'"),
    ("redis://:hunter2@", "is not a redis:// or rediss:// URL"),
    ("redis://127.0.0.1:99999/0", "MLIRGPU_REMOTE_CACHE: port '99999' is not a port"),
    ("redis://:hunter2@cache:http/0", "MLIRGPU_REMOTE_CACHE: port 'http' is not a port"),
])
def test_bad_settings_are_clear_errors(tmp_path, url, says):
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    run, _stages, _outputs = compile_in(tmp_path / "a", source, tmp_path / "ca", MLIRGPU_REMOTE_CACHE=url)
    assert run.returncode == 1 and says in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "hunter2" not in run.stderr
    assert not (tmp_path / "a" / "k.o").exists()


def test_scons_gpu_remote_cache_reaches_the_compiles(tmp_path, redis_server):
    project = make_project(tmp_path / "p")
    environ = dict(os.environ, MLIRGPU_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([SCONS, "-Q", f"GPU_REMOTE_CACHE={redis_server.url()}"], cwd=project, env=environ,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert redis_server.client.dbsize() >= 4 * 5  # four objects' stages at least
    other = make_project(tmp_path / "q")  # another machine: an empty local cache, the same sources
    environ = dict(os.environ, MLIRGPU_CACHE_DIR=str(tmp_path / "cache-q"),
                   MLIRGPU_REMOTE_CACHE=redis_server.url("mode=read"))
    run = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=other, env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    record = json.loads((other / "a.dumps" / "mlirgpu.json").read_text())
    assert {how for job in record["jobs"] for how in job["stages"].values()} == {"cached"}


def _reference_objects(project, tmp_path):
    """Each object of `project` built with no cache at all (a copy of the project, built first)."""
    reference = tmp_path / "reference"
    shutil.copytree(project, reference)
    environ = dict(os.environ, MLIRGPU_CACHE="off")
    run = subprocess.run([SCONS, "-Q"], cwd=reference, env=environ, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return {name: (reference / name).read_bytes() for name in ("a.o", "b.o", "c.o", "d.o")}


def test_redis_stopped_mid_build(tmp_path, redis_server):
    """The server goes away after the first object: the build finishes, with one warning, and every object is
    what a build without any cache makes."""
    import threading

    project = make_project(tmp_path / "p")
    expected = _reference_objects(project, tmp_path)

    def stop_after_first_object():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any((project / f"{n}.o").exists() for n in "abcd"):
            time.sleep(0.01)
        redis_server.stop()

    stopper = threading.Thread(target=stop_after_first_object)
    stopper.start()
    environ = dict(os.environ, MLIRGPU_CACHE_DIR=str(tmp_path / "cache"), MLIRGPU_REMOTE_CACHE=redis_server.url(),
                   MLIRGPU_REMOTE_CACHE_TIMEOUT="0.5")
    run = subprocess.run([SCONS, "-Q", "-j1"], cwd=project, env=environ, capture_output=True, text=True, timeout=300)
    stopper.join()
    assert run.returncode == 0, run.stderr
    assert {name: (project / name).read_bytes() for name in expected} == expected
    assert run.stderr.count("the remote cache redis://127.0.0.1") <= 1, run.stderr


def test_eviction_under_maxmemory_keeps_builds_right(tmp_path):
    """A server far too small for the build (200 KB beyond its own needs: it evicts as it goes): two machines'
    builds are still those of a build without cache."""
    server = Redis(tmp_path, extra=["--maxmemory-policy", "allkeys-lru"])
    server.client.config_set("maxmemory", server.client.info("memory")["used_memory"] + 200_000)
    try:
        project = make_project(tmp_path / "p")
        expected = _reference_objects(project, tmp_path)
        for machine in ("one", "two"):
            build = tmp_path / machine
            shutil.copytree(project, build)
            environ = dict(os.environ, MLIRGPU_CACHE_DIR=str(tmp_path / f"cache-{machine}"),
                           MLIRGPU_REMOTE_CACHE=server.url())
            run = subprocess.run([SCONS, "-Q", "-j2"], cwd=build, env=environ, capture_output=True, text=True,
                                 timeout=300)
            assert run.returncode == 0, run.stderr
            assert {name: (build / name).read_bytes() for name in expected} == expected
        assert server.client.info("stats")["evicted_keys"] > 0
    finally:
        server.stop()


@pytest.mark.parametrize("named", [True, False])
def test_a_booted_worker_has_the_redis_client_only_when_a_remote_cache_is_named(named, tmp_path):
    """The client's import takes a tenth of a second (redis-py loads asyncio): a worker's boot (done once in the
    zygote its workers fork from) does it when MLIRGPU_REMOTE_CACHE is set, so no first compile waits for it;
    without a remote cache no process loads it."""
    env = {key: value for key, value in os.environ.items() if key != "MLIRGPU_REMOTE_CACHE"}
    if named:
        env["MLIRGPU_REMOTE_CACHE"] = "redis://127.0.0.1:1/0"
    answer = tmp_path / "answer"  # a booted worker's stdout and stderr go to its LLVM log
    probe = ("import sys, os; from mlirgpu.execution import worker; from mlirgpu.llvm.toolchain import LLVM_MAJOR; "
             f"worker.boot(os.devnull, LLVM_MAJOR); open({str(answer)!r}, 'w').write(str('redis' in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert answer.read_text() == str(named)


def test_a_second_checkout_fetches_only_its_compile_entries(tmp_path, redis_server):
    """SCons -j2 with every dump, in a second checkout with its own local cache: each object is one compile entry
    from Redis (one lookup each, all hits), its translations are never looked up (background translations start
    only for a compile that misses), and every output is the first checkout's."""
    first, second = make_project(tmp_path / "a"), make_project(tmp_path / "elsewhere" / "b")
    for project, cache in ((first, "cache-a"), (second, "cache-b")):
        environ = dict(os.environ, MLIRGPU_CACHE_DIR=str(tmp_path / cache), MLIRGPU_REMOTE_CACHE=redis_server.url())
        run = subprocess.run([SCONS, "-Q", "-j2", "DUMP=1"], cwd=project, env=environ, capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, run.stderr
    stats = mlirgpu("cache", "stats", cwd=tmp_path, cache=tmp_path / "cache-b",
                    MLIRGPU_REMOTE_CACHE=redis_server.url()).stdout
    remote = stats.split("remote     ")[1]
    hits, misses = (int(remote.split(f"  {name}")[1].split()[0]) for name in ("hits", "misses"))
    assert (hits, misses) == (4, 0), stats  # a, b, c and d: nothing else was asked of the server

    def outputs(project):
        return {str(path.relative_to(project)): path.read_bytes() for path in sorted(project.rglob("*"))
                if path.is_file() and path.suffix in (".o", ".h", ".ll", ".isa", ".cubin", ".hsaco", ".fatbin")}

    assert outputs(first) == outputs(second) != {}


def remote_counts(tmp_path, cache, server):
    """The remote hits, misses and rejected values `mlirgpu cache stats` counts for the local cache `cache`."""
    stats = mlirgpu("cache", "stats", cwd=tmp_path, cache=cache, MLIRGPU_REMOTE_CACHE=server.url()).stdout
    remote = stats.split("remote     ")[1]
    return {name: int(remote.split(f"  {name}")[1].split()[0]) for name in ("hits", "misses", "rejected")}


@pytest.mark.parametrize("swapped", ["compile entries", "every entry"])
def test_swapped_values_are_misses_and_each_source_gets_its_own_bytes(tmp_path, redis_server, swapped):
    """A writer of the server swaps two sources' valid entries (the same plan, other chips): each value's seal
    names the key it was stored under, so on another machine every swapped value is a counted miss and each source
    gets a cold build's bytes, never the other's object."""
    client, sources, expected, keys = redis_server.client, {}, {}, {}
    for name, chip in (("a", "gfx942"), ("b", "gfx90a")):
        sources[name] = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / f"{name}.mlir", chip, 3)
        expected[name] = compile_in(tmp_path / f"cold-{name}", sources[name], tmp_path / f"c0-{name}",
                                    MLIRGPU_CACHE="off")[2]
        before = set(client.keys("*"))
        run, _stages, _outputs = compile_in(tmp_path / f"w-{name}", sources[name], tmp_path / f"cw-{name}",
                                            MLIRGPU_REMOTE_CACHE=redis_server.url())
        assert run.returncode == 0, run.stderr
        # largest first: the compile entry (it holds every stage's output and the object)
        keys[name] = sorted(set(client.keys("*")) - before, key=lambda entry: -len(client.get(entry)))
    pairs = list(zip(keys["a"], keys["b"]))[: 1 if swapped == "compile entries" else None]
    for key_a, key_b in pairs:
        value_a, value_b = client.get(key_a), client.get(key_b)
        client.set(key_a, value_b)
        client.set(key_b, value_a)
    for name in ("a", "b"):
        run, stages, outputs = compile_in(tmp_path / f"r-{name}", sources[name], tmp_path / f"cr-{name}",
                                          MLIRGPU_REMOTE_CACHE=redis_server.url())
        assert run.returncode == 0 and run.stderr == "", run.stderr
        assert outputs == expected[name]
        assert origins(stages) == ({"cached"} if swapped == "compile entries" else {"ran"})
        counts = remote_counts(tmp_path, tmp_path / f"cr-{name}", redis_server)
        assert counts["misses"] >= 1 and counts["rejected"] >= 1, counts


def _bound(key, payload, secret=None):
    from mlirgpu.cache import remote as remotecache

    return remotecache.seal(key.decode(), payload, secret.encode() if secret else None)


@pytest.mark.parametrize("value", ["another key's", "an older format's", "bound but unreadable"])
def test_a_foreign_value_is_a_miss_and_the_compile_runs(tmp_path, redis_server, value):
    """Values that are sealed but not this key's entry: another key's valid value, a value sealed as an earlier
    version stored entries (the local format, its sha256 only), and one bound to its key whose payload no stage can
    read (what a writer without a secret can still write). Each is a miss: the compile runs as cold, no error."""
    from mlirgpu.cache import store

    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    _run, _stages, expected = compile_in(tmp_path / "a", source, tmp_path / "ca", MLIRGPU_REMOTE_CACHE=redis_server.url())
    keys = sorted(redis_server.client.keys("*"))
    values = [redis_server.client.get(key) for key in keys]
    for index, key in enumerate(keys):
        redis_server.client.set(key, {
            "another key's": lambda: values[index - 1],
            "an older format's": lambda: store.seal(b"\xff\xfe not an output of ours"),
            "bound but unreadable": lambda: _bound(key, b"\xff\xfe not an output of ours"),
        }[value]())
    run, stages, outputs = compile_in(tmp_path / "b", source, tmp_path / "cb", MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert origins(stages) == {"ran"} and outputs == expected


def test_with_a_secret_only_entries_written_with_it_are_hits(tmp_path, redis_server):
    """MLIRGPU_REMOTE_CACHE_SECRET: a writer without the team's secret, or with another one, cannot give its
    entries to a reader that has it (misses, the compile runs, right bytes); the reader's own entries replace
    the ones it could not use, and serve the next machine with the secret; a build without a secret does not
    replace the team's entries (it cannot tell them from damaged ones)."""
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "k.mlir", "gfx942", 3)
    expected = compile_in(tmp_path / "cold", source, tmp_path / "c0", MLIRGPU_CACHE="off")[2]
    url = redis_server.url()
    steps = [("no secret", None, {"ran"}), ("team", "team secret", {"ran"}), ("team again", "team secret", {"cached"}),
             ("no secret again", None, {"ran"}), ("team after it", "team secret", {"cached"}),
             ("another secret", "another secret", {"ran"})]
    for index, (name, secret, how) in enumerate(steps):
        env = {"MLIRGPU_REMOTE_CACHE_SECRET": secret} if secret else {}
        run, stages, outputs = compile_in(tmp_path / f"m{index}", source, tmp_path / f"c{index + 1}",
                                          MLIRGPU_REMOTE_CACHE=url, **env)
        assert run.returncode == 0 and run.stderr == "", (name, run.stderr)
        assert origins(stages) == how and outputs == expected, name
        assert "team secret" not in run.stderr
    assert remote_counts(tmp_path, tmp_path / "c2", redis_server)["hits"] == 0


def test_a_value_is_bound_to_its_key_and_secret(tmp_path, redis_server):
    """The tier itself: two entries swapped, one truncated at every length, one written with another secret or
    none: all misses, counted as misses and as rejected values."""
    from mlirgpu.cache import remote as remotecache

    breaker = str(tmp_path / "breaker")
    writer = remotecache.RemoteTier(redis_server.url(), breaker)
    writer.put("one", b"first payload")
    writer.put("two", b"second payload")
    assert writer.get_many(["one", "two"]) == [b"first payload", b"second payload"]
    client, prefix = redis_server.client, remotecache._PREFIX
    one, two = client.get(prefix + "one"), client.get(prefix + "two")
    client.set(prefix + "one", two)
    client.set(prefix + "two", one)
    reader = remotecache.RemoteTier(redis_server.url(), breaker)
    assert reader.get_many(["one", "two"]) == [None, None]
    assert reader.counts == {"remote_hits": 0, "remote_misses": 2, "remote_stores": 0, "remote_rejected": 2}
    for length in range(len(one)):
        client.set(prefix + "one", one[:length])
        assert reader.get("one") is None
    client.set(prefix + "one", one)
    assert reader.get("one") == b"first payload"
    keyed = remotecache.RemoteTier(redis_server.url(), breaker, secret=b"team")
    assert keyed.get("one") is None
    keyed.put("one", b"first payload")  # replaces the value it could not use
    assert keyed.get("one") == b"first payload"
    assert remotecache.RemoteTier(redis_server.url(), breaker, secret=b"other").get("one") is None
    assert reader.get("one") is None
    reader.put("one", b"first payload")  # without a secret: the value may be the team's, and is kept
    assert keyed.get("one") == b"first payload"


def test_a_library_compile_goes_through_both_caches(tmp_path, redis_server):
    """A device-function library (`--emit library`): its stages are stored like an object's, a second machine
    gets every one from the remote tier, and the bitcode is the same."""
    source = tmp_path / "lib.mlir"
    source.write_text(LIBRARY)

    def build(name, **env):
        folder = tmp_path / name
        folder.mkdir()
        run = mlirgpu("compile", "--emit", "library", str(source), "-o", "lib", "--dump-intermediates", "d",
                      cwd=folder, cache=tmp_path / f"cache-{name}", **env)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        record = json.loads((folder / "d" / "mlirgpu.json").read_text())
        return {job["stem"]: job["stages"] for job in record["jobs"]}, (folder / "lib.nvvm.bc").read_bytes()

    _stages, expected = build("off", MLIRGPU_CACHE="off")
    stages, bitcode = build("a", MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert origins(stages) == {"ran"} and set(stages["twice"]) == {"initial.ll", "linked.ll", "bc"}
    assert bitcode == expected
    stages, bitcode = build("b", MLIRGPU_REMOTE_CACHE=redis_server.url())
    assert origins(stages) == {"cached"} and bitcode == expected


LIBRARY = """\
module attributes {gpu.container_module} {
  gpu.module @twice [#nvvm.target<chip = "sm_80">] {
    llvm.func @twice(%x: f32) -> f32 {
      %r = llvm.fadd %x, %x : f32
      llvm.return %r : f32
    }
  }
}
"""
