"""Benchmarks of sharing beyond one machine: the Redis remote stage cache and distributed compiles on Dask.

- Remote cache: two fresh checkouts of one corpus at different paths, each with its own empty local cache,
  sharing a real redis-server on 127.0.0.1. The first's build compiles everything and fills Redis; the
  second's build takes every stage from Redis. Both with `scons -j2 DUMP=1` and with Ninja (-j2) running one
  `mlirgpu compile` per source (compile server warm). Every repetition copies new checkouts, as a CI job clones
  one: a build into folders emptied just before runs slower on ext4, which looks past recently deleted inodes
  for every file it makes (both builds alike, the cold one more). Reported: the times, their ratio, and the
  upstream chain's build of the same corpus in the same repetition; the outputs are checked byte-identical.
- Distributed scaling: a corpus of 200 sources built by SCons (-j16) through a Dask LocalCluster of N worker
  processes (one compile at a time each, stage cache off, each worker's compiles through its compile server),
  for N = 1, 2, 4, against the same build on this machine. From the profile of every remote compile: the
  client's wait per job (queueing included), the worker's time per job, and the `mlirgpu compile` command's
  time inside it (the rest is the worker's scratch folder and files), and what did not spread over the workers
  (build time minus the workers' total busy time / N: SCons, the Dask client's start, transfers, writing). A model
  T(N) = a + b / N from the one-worker build (b: the worker's busy time; a: what did not spread) predicts
  clusters whose workers have cores of their own; on this machine N > 1 workers share its cores with each other
  and with SCons, which the measured N = 2, 4 show.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SITE = os.path.join(ROOT, "site_scons")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _clean(project):
    for name in os.listdir(project):
        if name == "out" or name.startswith(".sconsign"):
            path = os.path.join(project, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)


def comparable(name, data):
    """A build's file as two builds of the same sources on two machines must agree on it (None: one they need
    not): repro.sh names the tools of the machine that compiled, and a record says which stages that machine's
    cache served and which tools would remake them."""
    if name.endswith("repro.sh"):
        return None
    if name.endswith("mlirgpu.json"):
        record = json.loads(data)
        for job in record["jobs"]:
            job.pop("stages"), job.pop("repro")
        record["sha256"] = {k: v for k, v in record["sha256"].items() if not k.endswith("repro.sh")}
        return json.dumps(record, sort_keys=True).encode()
    return data


def _outputs(project):
    """Every file under out/, as `comparable` has it."""
    found = {}
    for folder, _dirs, names in os.walk(os.path.join(project, "out")):
        for name in names:
            path = os.path.join(folder, name)
            data = comparable(name, open(path, "rb").read())
            if data is not None:
                found[os.path.relpath(path, project)] = data
    return found


def remote_cache(base, corpus_dir, reps, scons, timed):
    """The second checkout's clean build from Redis against the first's cold one (see the module's text), with
    SCons and with Ninja running `mlirgpu compile` per source (compile server warm)."""
    import fast
    import redis

    from mlirgpu.llvm import toolchain

    server = shutil.which("redis-server")
    if not server:
        return {"skipped": "redis-server is not installed (tools/bootstrap installs it)"}
    port = _free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                "--dir", base], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    servers = os.path.join(base, "fleet-server")
    builds = {"scons": (scons + ["-Q", "-j2", "DUMP=1"], "off"), "ninja": ([fast.ninja(), "-j2", "-f", "ours.ninja"], "on")}
    samples = {}
    identical = True
    runs = []
    try:
        for rep in range(reps):
            for tool, (argv, use_server) in builds.items():
                client.flushall()
                run = os.path.join(base, f"fleet-{tool}-{rep}")
                runs.append(run)
                first, second = os.path.join(run, "checkout-a"), os.path.join(run, "elsewhere", "checkout-b")
                for copy in (first, second):
                    shutil.copytree(corpus_dir, copy,
                                    ignore=shutil.ignore_patterns("out", ".sconsign*", "*.jsonl", ".ninja*"))
                    fast.write_ninja(copy, toolchain)
                for label, project in (("first checkout, cold", first), ("second checkout, from Redis", second)):
                    env = dict(fast.environment(servers, server=use_server == "on", cache=True),
                               MLIRGPU_CACHE_DIR=os.path.join(run, "cache-" + os.path.basename(project)),
                               MLIRGPU_REMOTE_CACHE=f"redis://127.0.0.1:{port}/0")
                    if use_server == "on":
                        fast.server(env, "start")  # warm: it has served the builds before this one
                    os.sync()
                    samples.setdefault(f"{tool}: {label}", []).append(timed(argv, project, env)[0])
                identical = identical and _outputs(first) == _outputs(second) != {}
            _clean(first)
            os.sync()
            samples.setdefault("upstream make -j2", []).append(timed(["make", "-s", "-j2", "-f", "upstream.mk"],
                                                                     first)[0])
        keys = client.dbsize()
        memory = client.info("memory")["used_memory"]
    finally:
        fast.server(fast.environment(servers, server=True, cache=True), "stop")
        process.terminate()
        process.wait(timeout=10)
        for run in runs:
            shutil.rmtree(run, ignore_errors=True)
    result = {name: {"median": statistics.median(v), "min": min(v), "max": max(v), "samples": v}
              for name, v in samples.items()}
    result["identical"] = identical
    result["redis_keys"] = keys
    result["redis_bytes"] = memory
    return result


def _cluster(workers, env):
    """A LocalCluster of `workers` processes, one compile at a time each, with `env` (loopback only)."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, worker_dashboard_address=None, preload=["mlirgpu.execution.dask_worker"],
                           env=env)
    return cluster, Client(cluster, set_as_default=False)


def scaling(base, count, reps, scons, timed, write_corpus, worker_counts=(1, 2, 4)):
    """SCons builds of `count` sources through N Dask workers, against the same build here (module text)."""
    project = os.path.join(base, f"fleet{count}")
    write_corpus(project, count)
    local_env = dict(os.environ, MLIRGPU_CACHE="off", MLIRGPU_SERVER="off")
    results = {"sources": count, "cores": os.cpu_count(), "builds": {}}
    local = []
    for _rep in range(reps):
        _clean(project)
        os.sync()
        local.append(timed(scons + ["-Q", "-j2", "DUMP=1"], project, local_env)[0])
    reference = _outputs(project)
    results["builds"]["local -j2"] = {"median": statistics.median(local), "samples": local}
    for workers in worker_counts:
        server_dir = os.path.join(base, f"worker-servers-{workers}")
        os.makedirs(server_dir, mode=0o700, exist_ok=True)
        env = {"MLIRGPU_CACHE": "off", "MLIRGPU_SERVER": "on", "MLIRGPU_SERVER_DIR": server_dir,
               "MLIRGPU_SERVER_IDLE": "600", "PYTHONPATH": SITE}
        cluster, client = _cluster(workers, env)
        try:
            url = "dask://" + cluster.scheduler_address[len("tcp://"):]
            client_profile = os.path.join(base, f"client-profile-{workers}.jsonl")
            samples = []
            for rep in range(reps + 1):  # the first build warms the workers' compile servers: not counted
                _clean(project)
                if os.path.exists(client_profile):
                    os.unlink(client_profile)
                build_env = dict(local_env, MLIRGPU_EXECUTOR=url, MLIRGPU_PROFILE=client_profile)
                os.sync()
                seconds = timed(scons + ["-Q", "-j16", "DUMP=1"], project, build_env)[0]
                if rep:
                    samples.append(seconds)
            if _outputs(project) != reference:
                raise SystemExit(f"distributed build with {workers} workers differs from the local build")
            remote = [json.loads(line) for line in open(client_profile)]
            if len(remote) != count:
                raise SystemExit(f"{count - len(remote)} compiles did not run on the cluster")
            wait = statistics.median(r["seconds"] for r in remote)
            worker = statistics.median(r["worker_seconds"] for r in remote)
            compile_ = statistics.median(r["command_seconds"] for r in remote)
            busy = sum(r["worker_seconds"] for r in remote)
            results["builds"][f"{workers} workers"] = {
                "median": statistics.median(samples), "samples": samples, "workers": workers,
                "worker_seconds_total": busy, "not_spread": statistics.median(samples) - busy / workers,
                "client_wait_per_job": wait, "worker_per_job": worker, "compile_per_job": compile_,
                "sent_bytes_per_job": statistics.median(r["sent_bytes"] for r in remote),
                "returned_bytes_per_job": statistics.median(r["returned_bytes"] for r in remote)}
        finally:
            client.close()
            cluster.close()
            subprocess.run([sys.executable, "-m", "mlirgpu", "server", "stop"], capture_output=True,
                           env=dict(os.environ, PYTHONPATH=SITE, MLIRGPU_SERVER_DIR=server_dir))
    results["model"] = _model(results["builds"]["1 workers"])
    return results


def _model(one):
    """T(N) = a + b / N for N workers with cores of their own (as on a cluster), from the one-worker build,
    where nothing else shares the worker's core: b is the workers' busy time, a what did not spread. The
    builds with more workers on this machine share its cores with each other and with SCons, so they show the
    contention, not the scaling."""
    a, b = one["not_spread"], one["worker_seconds_total"]
    return {"a": a, "b": b, "predicted": {str(n): a + b / n for n in (2, 4, 8, 16, 32, 64)}}


def report(results):
    lines = []
    cache = results.get("remote_cache", {})
    if "skipped" in cache:
        lines.append(f"Remote cache: skipped ({cache['skipped']})")
    elif cache:
        up = cache["upstream make -j2"]
        lines.append(f"Remote cache (Redis), {results['corpus_sources']} sources, clean builds with dumps in two "
                     f"checkouts with their own local caches, -j2 (median s; upstream chain {up['median']:.2f}):")
        for tool in ("scons", "ninja"):
            cold, warm = cache[f"{tool}: first checkout, cold"], cache[f"{tool}: second checkout, from Redis"]
            lines.append(f"  {tool:5s} first, cold {cold['median']:.2f}; second, from Redis {warm['median']:.2f} = "
                         f"{warm['median'] / cold['median']:.2f}x of cold ({warm['median'] / up['median']:.2f}x "
                         "upstream)")
        lines.append(f"  outputs identical: {cache['identical']}; {cache['redis_keys']} keys, "
                     f"{cache['redis_bytes'] / 1e6:.1f} MB in Redis")
    scale = results.get("scaling")
    if scale:
        local = scale["builds"]["local -j2"]["median"]
        lines.append(f"Distributed compiles (Dask LocalCluster on this {scale['cores']}-core machine), "
                     f"{scale['sources']} sources, scons -j16 DUMP=1 (median s; local build -j2 {local:.2f}):")
        for name, value in scale["builds"].items():
            if "workers" not in value:
                continue
            lines.append(f"  {name:10s} {value['median']:6.2f}  ({value['median'] / local:.2f}x local); per job on a "
                         f"worker {value['worker_per_job'] * 1000:.0f} ms (`mlirgpu compile` "
                         f"{value['compile_per_job'] * 1000:.0f} ms), client's wait incl. queue "
                         f"{value['client_wait_per_job'] * 1000:.0f} ms; {value['sent_bytes_per_job'] / 1e3:.1f} kB "
                         f"sent, {value['returned_bytes_per_job'] / 1e3:.1f} kB back; not spread over workers "
                         f"{value['not_spread']:.2f} s")
        model = scale["model"]
        predicted = ", ".join(f"N={n}: {t:.1f} s" for n, t in model["predicted"].items())
        lines.append(f"  model T(N) = {model['a']:.2f} + {model['b']:.2f}/N (from the one-worker build; workers with "
                     f"cores of their own): {predicted}; never below {model['a']:.2f} s (SCons, the client, writing "
                     "outputs)")
    return lines
