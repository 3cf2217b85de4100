"""Benchmarks: scons-mlir-gpu against the upstream tool chain, measured side by side in the same run.

    ./dev bench [--quick] [--out DIR] [--reps N]

Upstream chain, per source (driven by `make -jN`): `mlir-opt --gpu-module-to-binary`, `mlir-translate
--mlir-to-llvmir`, `llc -filetype=obj` (it keeps no intermediates). Ours: `scons -jN DUMP=1` with GpuObject.
Repetitions are interleaved (ours, upstream, ours, ...); medians and min-max are reported, and the ratio
ours/upstream. Sections: full builds (-j2, -j1), single-source latency, null builds against SCons's floor (the
same number of targets from a trivial Command), an incremental rebuild, DUMP=1 against DUMP=0 with peak memory,
the scan of files of many modules against mlir-opt, big inputs (files of 1000-10,000 modules, a 48 MiB resource blob
or comment file: bench/many_modules.py), a profile of where the time goes (MLIRGPU_PROFILE), the work floor of
cold builds (bench/pipelines.work_floor: the work both chains do against upstream's whole chain); these
run without the stage cache and the compile server. Then the server's and the cache's (bench/fast.py): Ninja
builds per file with the server warm, cold and off, one source with a warm server, early cutoff in a file of 20
modules, and SCons with one of 200 sources edited against SCons's floor plus the upstream chain. Then sharing
beyond one machine (bench/fleet.py): a second checkout's build from the Redis remote cache against the first's
cold one, and SCons builds through a Dask LocalCluster of 1, 2 and 4 workers with per-job overheads and a model
for larger clusters. Writes DIR/results.json and prints a table.
"""
import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
sys.path.insert(0, HERE)

import fast  # noqa: E402
import fleet  # noqa: E402
import many_modules  # noqa: E402
import pipelines  # noqa: E402
from corpus import write_corpus  # noqa: E402
from mlirgpu.llvm import toolchain  # noqa: E402
from mlirgpu.pipeline.stages import STAGES  # noqa: E402

SCONS = [sys.executable, os.path.join(os.path.dirname(sys.executable), "scons")]


def timed(argv, cwd, env=None):
    """Seconds a command takes, and the CPU seconds of its whole process tree: `perf stat`'s task-clock where
    perf works (it counts every descendant, waited for or not: a worker's fork servers and their runs, which no
    process waits for, are half of a build's CPU), else user + system of it and every process it waited for."""
    counted = _PERF and ["perf", "stat", "-x,", "-e", "task-clock", "-o", _PERF, "--"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run = subprocess.run((counted or []) + argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(argv)} in {cwd}\n{run.stderr[-3000:]}")
    if counted:
        with open(_PERF) as handle:
            return seconds, next(float(line.split(",")[0]) / 1000 for line in handle if ",task-clock" in line)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _perf_output():
    """A file for `perf stat`'s counts, or '' where perf is missing or may not count (perf_event_paranoid)."""
    if not shutil.which("perf"):
        return ""
    path = os.path.join(tempfile.gettempdir(), f"mlirgpu-bench-perf-{os.getpid()}.txt")
    probe = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-o", path, "--", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path if probe.returncode == 0 else ""


_PERF = _perf_output()


def peak_memory(argv, cwd):
    """Peak total proportional memory (PSS, KiB) of a command's process tree (everything in its session: SCons,
    the zygote, LLVM workers and tools; or make and the upstream tools), sampled every 10 ms in a separate,
    untimed run. PSS splits each shared page among the processes sharing it, so forked workers and shared
    libraries count once, not once per process as a sum of RSS would."""
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    peak = 0
    while process.poll() is None:
        total = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[3]) != process.pid:  # session id
                        continue
                with open(f"/proc/{entry}/smaps_rollup", encoding="ascii") as handle:
                    total += next(int(line.split()[1]) for line in handle if line.startswith("Pss:"))
            except (OSError, StopIteration, ValueError):
                continue
        peak = max(peak, total)
        time.sleep(0.01)
    return peak


def summary(samples, cpu):
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples),
            "cpu_median": statistics.median(cpu), "samples": samples, "cpu_samples": cpu}


def paired(a, b):
    """Median and range of the per-repetition ratios a/b. Both ran in the same repetition, minutes apart at
    most, so a slow spell of the machine moves both: steadier than a ratio of medians on a noisy machine."""
    ratios = [x / y for x, y in zip(a["samples"], b["samples"]) if y]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def clean(project):
    for name in os.listdir(project):
        path = os.path.join(project, name)
        if name in ("out", ".sconsign.dblite") or name.startswith(".sconsign"):
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)


def interleave(variants, reps, prepare):
    """variants: {name: (argv, cwd, env)}; each repetition runs every variant once, in its own (seeded) random
    order, so no variant always runs first or after the same one (on a shared machine a run is slower after a
    heavy one), and the disk is synced before each run, so none pays for the previous one's write-back."""
    samples = {name: [] for name in variants}
    cpu = {name: [] for name in variants}
    names = list(variants)
    for rep in range(reps):
        order = list(names)
        random.Random(rep).shuffle(order)
        for name in order:
            argv, cwd, env = variants[name]
            prepare(name, cwd)
            os.sync()
            seconds, cpu_seconds = timed(argv, cwd, env)
            samples[name].append(seconds)
            cpu[name].append(cpu_seconds)
    return {name: summary(samples[name], cpu[name]) for name in names}


def full_builds(corpus_dir, floor_dir, reps, jobs_list):
    variants = {}
    for jobs in jobs_list:
        variants[f"ours -j{jobs} DUMP=1"] = (SCONS + ["-Q", f"-j{jobs}", "DUMP=1"], corpus_dir, None)
        variants[f"upstream make -j{jobs}"] = (["make", "-s", f"-j{jobs}", "-f", "upstream.mk"], corpus_dir, None)
    variants["ours -j2 DUMP=0"] = (SCONS + ["-Q", "-j2", "DUMP=0"], corpus_dir, None)
    for dump in (1, 0):
        variants[f"SCons floor -j2 DUMP={dump}"] = (SCONS + ["-Q", "-j2", f"DUMP={dump}"], floor_dir, None)
    results = interleave(variants, reps, lambda name, cwd: clean(cwd))
    for name, (argv, cwd, _env) in variants.items():
        clean(cwd)
        results[name]["peak_pss_kib"] = peak_memory(argv, cwd)
    return results


def write_dump_floor(base, corpus_dir):
    """SCons's floor for what DUMP=1 adds: one trivial Command per source writing the same files our build
    writes (copied from a finished build), with the dumps as targets for DUMP=1 and only object and header for
    DUMP=0. The difference between its two builds is what SCons itself charges for the extra targets."""
    floor = os.path.join(base, "dumpfloor")
    reference = os.path.join(base, "reference")
    shutil.copytree(os.path.join(corpus_dir, "out"), reference)
    os.makedirs(floor)
    lines = ["import shutil",
             "def copy(target, source, env):",
             "    for t in target:",
             f"        shutil.copyfile({reference!r} + '/' + t.path[len('out/'):], t.path)",
             "    return 0",
             "DefaultEnvironment(tools=[])",
             "env = Environment(tools=[])",
             "dump = ARGUMENTS.get('DUMP') == '1'"]
    for source in sorted(f for f in os.listdir(corpus_dir) if f.endswith(".mlir")):
        name = source[: -len(".mlir")]
        shutil.copy(os.path.join(corpus_dir, source), os.path.join(floor, source))
        dumps = sorted(f"out/{name}.dumps/{f}" for f in os.listdir(os.path.join(reference, f"{name}.dumps")))
        lines.append(f"env.Command([{f'out/{name}.o'!r}, {f'out/{name}.h'!r}] + ({dumps!r} if dump else []), "
                     f"{source!r}, copy)")
    with open(os.path.join(floor, "SConstruct"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return floor


def latency(corpus_dir, reps, files):
    out = {}
    for label, source, fmt, toolkit in files:
        ours = [os.path.join(os.path.dirname(sys.executable), "mlirgpu"), "compile", source, "-o", "lat.o",
                "--format", fmt, "--dump-intermediates", "lat.dumps", "--toolkit", toolkit]
        upstream = ["sh", "-c", f"{toolchain.llvm_tool('mlir-opt')} {source} "
                    f"'--gpu-module-to-binary=format={fmt} toolkit={toolkit}' -o lat.bin.mlir && "
                    f"{toolchain.llvm_tool('mlir-translate')} --mlir-to-llvmir lat.bin.mlir -o lat.ll && "
                    f"{llc()} -filetype=obj lat.ll -o lat-up.o"]
        result = interleave({"ours": (ours, corpus_dir, None), "upstream": (upstream, corpus_dir, None)}, reps,
                            lambda name, cwd: None)
        out[label] = result
    return out


def cuda_root():
    from mlirgpu.targets.cuda import cuda_toolkit

    return cuda_toolkit()


def llc():
    return toolchain.llvm_tool("llc")


def scan_scaling(base, sizes, reps):
    """What a build tool asks on every run, against mlir-opt reading the same file: `mlirgpu list-outputs` on a
    file of N small modules (the scan, linear in N) and `mlir-opt FILE` (parse and print), for growing N."""
    out = {}
    mlirgpu = os.path.join(os.path.dirname(sys.executable), "mlirgpu")
    for size in sizes:
        folder = os.path.join(base, f"scan{size}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "many.mlir")
        with open(path, "w") as handle:
            handle.write("module attributes {gpu.container_module} {\n")
            for index in range(size):
                handle.write(f'  gpu.module @m{index} [#nvvm.target<chip = "sm_80">] {{\n    llvm.func @k{index}'
                             "(%a: f32) attributes {gpu.kernel, nvvm.kernel} { llvm.return }\n  }\n")
            handle.write("}\n")
        ours = [mlirgpu, "list-outputs", path, "-o", "many.o", "--dump-intermediates", "D"]
        upstream = [toolchain.llvm_tool("mlir-opt"), path, "-o", os.devnull]
        out[str(size)] = interleave({"ours": (ours, folder, None), "upstream": (upstream, folder, None)}, reps,
                                    lambda name, cwd: None)
    return out


def null_builds(base, sizes, reps):
    out = {}
    for size in sizes:
        project = os.path.join(base, f"null{size}")
        write_corpus(project, size, null_build=True)
        timed(SCONS + ["-Q", "-j2", "DUMP=1"], project)
        count = sum(len(t) for t in built_targets(project).values())
        floor = os.path.join(base, f"floor{size}")
        write_floor(floor, project)
        timed(SCONS + ["-Q", "-j2"], floor)
        result = interleave({"ours": (SCONS + ["-Q", "DUMP=1"], project, None), "floor": (SCONS + ["-Q"], floor, None)},
                            reps, lambda name, cwd: None)
        result["targets"] = count
        out[str(size)] = result
    return out


def built_targets(project):
    """{source: its targets} as the project's DUMP=1 build left them: the object, the header and every file of the
    dump folder, so the floor has exactly the targets our build declares, whatever dumps a compile writes."""
    groups = {}
    for source in sorted(name for name in os.listdir(project) if name.endswith(".mlir")):
        stem = source[:-len(".mlir")]
        dumps = sorted(os.listdir(os.path.join(project, "out", stem + ".dumps")))
        groups[source] = [f"out/{stem}.o", f"out/{stem}.h"] + [f"out/{stem}.dumps/{name}" for name in dumps]
    return groups


def write_floor(floor, project):
    """A project with the same targets (same names) made by a trivial Command per source, after the project's
    DUMP=1 build."""
    os.makedirs(floor, exist_ok=True)
    groups = built_targets(project)
    lines = ["import shutil",
             "def copy(target, source, env):",
             "    for t in target:",
             "        shutil.copyfile(str(source[0]), str(t))",
             "    return 0",
             "DefaultEnvironment(tools=[])",
             "env = Environment(tools=[])"]
    for source, targets in groups.items():
        shutil.copy(os.path.join(project, source), os.path.join(floor, source))
        lines.append(f"env.Command({targets!r}, {source!r}, copy)")
    with open(os.path.join(floor, "SConstruct"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


def incremental(base, size, reps):
    project = os.path.join(base, f"incr{size}")
    write_corpus(project, size, null_build=True)
    timed(SCONS + ["-Q", "-j2", "DUMP=1"], project)
    timed(["make", "-s", "-j2", "-f", "upstream.mk"], project)
    victim = os.path.join(project, sorted(f for f in os.listdir(project) if f.endswith(".mlir"))[size // 2])

    def touch(name, cwd):
        text = open(victim).read()
        with open(victim, "w") as handle:
            handle.write(text + "// touched\n" if not text.endswith("// touched\n") else text[: -len("// touched\n")])

    return interleave({"ours": (SCONS + ["-Q", "-j2", "DUMP=1"], project, None),
                       "upstream": (["make", "-s", "-j2", "-f", "upstream.mk"], project, None)}, reps, touch)


def profile(corpus_dir):
    path = os.path.join(corpus_dir, "profile.jsonl")
    if os.path.exists(path):
        os.unlink(path)
    clean(corpus_dir)
    env = dict(os.environ, MLIRGPU_PROFILE=path)
    seconds, _ = timed(SCONS + ["-Q", "-j1", "DUMP=1"], corpus_dir, env)
    stages, tools, compile_seconds = {}, {}, 0.0
    for line in open(path):
        entry = json.loads(line)
        compile_seconds += entry["seconds"]
        for stage, value in entry["stages"].items():
            stages[stage] = stages.get(stage, 0.0) + value
        for tool, (runs, value) in entry["tools"].items():
            tools.setdefault(tool, [0, 0.0])
            tools[tool][0] += runs
            tools[tool][1] += value
    return {"build_seconds": seconds, "compile_seconds": compile_seconds, "stages": stages,
            "tools": {k: {"runs": v[0], "seconds": v[1]} for k, v in tools.items()}}


def ratio(a, b):
    return a["median"] / b["median"] if b["median"] else float("nan")


def report(results):
    lines = []
    for keys, part in (("full", _full_report), ("latency", _latency_report), ("null", _null_report),
                       ("scan", _scan_report), ("many_modules", _many_modules_report),
                       ("incremental", _incremental_report),
                       ("ninja single cutoff scons_one_edited", fast_report), ("profile", _profile_report)):
        if all(key in results for key in keys.split()):  # a run of some sections (--only) reports those
            lines.extend(part(results))
    lines.extend(pipelines.report(results, paired))
    lines.extend(fleet.report(results))
    return "\n".join(lines)


def _full_report(results):
    lines = []
    full = results["full"]
    lines.append("Full build, corpus of %d sources (median s, min-max; median CPU s; peak memory (PSS) of the "
                 "process tree)" % results["corpus_sources"])
    for name, value in full.items():
        lines.append(f"  {name:24s} {value['median']:7.2f}  ({value['min']:.2f}-{value['max']:.2f})  "
                     f"CPU {value['cpu_median']:5.2f}  peak {value['peak_pss_kib'] / 1024:.0f} MiB")

    def paired_line(label, a, b, form="{:.2f}"):
        value = paired(full[a], full[b])
        lines.append(f"  {label}: {form.format(value['median'])} (per repetition "
                     f"{form.format(value['min'])}-{form.format(value['max'])}; ratio of medians "
                     f"{form.format(ratio(full[a], full[b]))})")

    paired_line("ratio ours/upstream -j2", "ours -j2 DUMP=1", "upstream make -j2")
    if "ours -j1 DUMP=1" in full:
        paired_line("ratio ours/upstream -j1", "ours -j1 DUMP=1", "upstream make -j1")
        paired_line("speed-up -j1 -> -j2 (ours)", "ours -j1 DUMP=1", "ours -j2 DUMP=1", "{:.2f}x")
    dump = paired(full["ours -j2 DUMP=1"], full["ours -j2 DUMP=0"])
    dump_cpu = full["ours -j2 DUMP=1"]["cpu_median"] / full["ours -j2 DUMP=0"]["cpu_median"] - 1
    lines.append(f"  DUMP=1 cost over DUMP=0: {(dump['median'] - 1) * 100:+.1f}% (per repetition "
                 f"{(dump['min'] - 1) * 100:+.1f}% to {(dump['max'] - 1) * 100:+.1f}%; CPU {dump_cpu * 100:+.1f}%)")
    ours = full["ours -j2 DUMP=1"]["median"] - full["ours -j2 DUMP=0"]["median"]
    floor = full["SCons floor -j2 DUMP=1"]["median"] - full["SCons floor -j2 DUMP=0"]["median"]
    lines.append(f"  what DUMP=1 adds: ours {ours:+.2f} s; SCons's floor for the same extra targets and files "
                 f"{floor:+.2f} s, {floor / full['ours -j2 DUMP=0']['median'] * 100:.1f}% of our DUMP=0 build")
    return lines


def _latency_report(results):
    lines = ["Single-source latency (median s): ours / upstream = ratio"]
    for label, value in results["latency"].items():
        lines.append(f"  {label:8s} {value['ours']['median']:.3f} / {value['upstream']['median']:.3f} = "
                     f"{ratio(value['ours'], value['upstream']):.2f}")
    return lines


def _null_report(results):
    lines = ["Null build with dumps (median s): ours / SCons floor (same target count) = ratio"]
    for size, value in results["null"].items():
        lines.append(f"  {size:>5s} sources, {value['targets']} targets: {value['ours']['median']:.2f} / "
                     f"{value['floor']['median']:.2f} = {ratio(value['ours'], value['floor']):.2f}")
    return lines


def _scan_report(results):
    lines = ["Scan of a file of N modules: `mlirgpu list-outputs` / `mlir-opt FILE` (median s) = ratio"]
    for size, value in results["scan"].items():
        lines.append(f"  {size:>6s} modules: {value['ours']['median']:.2f} / {value['upstream']['median']:.2f} = "
                     f"{ratio(value['ours'], value['upstream']):.2f}")
    return lines


def _many_modules_report(results):
    lines = ["Big inputs, cold, to ISA (`mlirgpu compile` / `mlir-opt --gpu-module-to-binary`): median s, peak PSS"]
    lines.extend("  " + line for line in many_modules.report(results["many_modules"]).splitlines())
    return lines


def _incremental_report(results):
    inc = results["incremental"]
    lines = []
    lines.append(f"Incremental, one of {results['incremental_sources']} sources touched (median s): ours "
                 f"{inc['ours']['median']:.2f} / upstream {inc['upstream']['median']:.2f} = "
                 f"{ratio(inc['ours'], inc['upstream']):.2f}")
    return lines


def _profile_report(results):
    prof = results["profile"]
    lines = []
    lines.append(f"Where the time goes (-j1 build {prof['build_seconds']:.2f} s, in compiles "
                 f"{prof['compile_seconds']:.2f} s):")
    stages = {stage.suffix for stage in STAGES}
    for stage, value in sorted(prof["stages"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {'stage' if stage in stages else 'step ':5s} {stage:12s} {value:7.2f} s")
    for tool, value in sorted(prof["tools"].items(), key=lambda kv: -kv[1]["seconds"]):
        lines.append(f"  tool  {tool:12s} {value['seconds']:7.2f} s in {value['runs']} runs")
    return lines


def fast_report(results):
    """The compile server's and stage cache's sections."""
    lines = []
    ninja = results["ninja"]
    up = ninja["ninja upstream"]
    lines.append(f"Ninja-style full build, {results['corpus_sources']} sources (per-file mlirgpu compile with dumps, "
                 "ninja -j2, stage cache off): median s, ours/upstream per repetition")
    for name in ("ninja ours, in process", "ninja ours, server cold", "ninja ours, server warm"):
        value = paired(ninja[name], up)
        lines.append(f"  {name[6:]:22s} {ninja[name]['median']:6.2f} / {up['median']:.2f} = {value['median']:.2f} "
                     f"({value['min']:.2f}-{value['max']:.2f})")
    lines.append("One source, server warm, stage cache off (median s): ours / upstream = ratio")
    for label, value in results["single"].items():
        lines.append(f"  {label:8s} {value['ours, server warm']['median']:.3f} / {value['upstream']['median']:.3f} = "
                     f"{paired(value['ours, server warm'], value['upstream'])['median']:.2f}")
    cut = results["cutoff"]
    cold = cut["cold: every module"]
    lines.append("Early cutoff, a file of 20 modules (server warm, stage cache on): median s, against the cold compile")
    for name, value in cut.items():
        lines.append(f"  {name:20s} {value['median']:.3f} = {value['median'] / cold['median']:.2f}x; "
                     f"{value['modules_run']} modules ran a stage, {value['ran']} stages ran")
    one = results["scons_one_edited"]
    floor = one["floor null build"]["median"] + one["upstream, one source"]["median"]
    lines.append(f"SCons, one of {results['incremental_sources']} sources edited, server warm: ours "
                 f"{one['ours, server warm']['median']:.2f} s / (SCons floor {one['floor null build']['median']:.2f} + "
                 f"upstream chain {one['upstream, one source']['median']:.2f}) = "
                 f"{one['ours, server warm']['median'] / floor:.2f}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repetition (CI smoke run)")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    parser.add_argument("--only", default="", help="comma-separated sections to run (default: all), e.g. "
                        "full,null,remote_cache,pipelines_cold,pip_served")
    args = parser.parse_args(argv)
    reps = args.reps or (1 if args.quick else 7)
    sources = 6 if args.quick else 40
    null_sizes = (10,) if args.quick else (50, 200, 1000)
    incr = 10 if args.quick else 200
    os.makedirs(args.out, exist_ok=True)
    base = tempfile.mkdtemp(prefix="mlirgpu-bench-")
    # The sections before `fast` measure compiling: no stage cache, no server (each `fast` run sets its own). The
    # tool facts (hashes of the tools, see mlirgpu.llvm.toolchain) are the bench's own too, shared by every section as
    # they are by every build of a user.
    os.environ.update(MLIRGPU_CACHE="off", MLIRGPU_SERVER="off", MLIRGPU_CACHE_DIR=os.path.join(base, "cache"),
                      XDG_CACHE_HOME=os.path.join(base, "user-cache"))
    try:
        corpus_dir = os.path.join(base, "corpus")
        count = write_corpus(corpus_dir, sources)
        timed(SCONS + ["-Q", "-j2", "DUMP=1"], corpus_dir)  # warm caches (device libraries, page cache)
        results = {"corpus_sources": count, "incremental_sources": incr, "quick": args.quick}
        for name, measure in sections(args, base, corpus_dir, reps, incr, null_sizes).items():
            if not args.only or name in args.only.split(","):
                results[name] = measure()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    with open(os.path.join(args.out, "results.json"), "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
    text = report(results)
    with open(os.path.join(args.out, "results.txt"), "w") as handle:
        handle.write(text + "\n")
    print(text)
    return 0


def sections(args, base, corpus_dir, reps, incr, null_sizes):
    """Every section of the benchmark, by its key in results.json, in the order they run."""
    latency_files = corpus_latency_files(corpus_dir)
    return {
        "full": lambda: full_builds(corpus_dir, write_dump_floor(base, corpus_dir), reps,
                                    (2,) if args.quick else (2, 1)),
        "latency": lambda: latency(corpus_dir, reps, latency_files),
        "null": lambda: null_builds(base, null_sizes, reps),
        "incremental": lambda: incremental(base, incr, reps),
        "scons_one_edited": lambda: fast.scons_one_edited(os.path.join(base, f"incr{incr}"), base, reps, interleave,
                                                          SCONS, write_floor, toolchain),
        "ninja": lambda: fast.ninja_builds(corpus_dir, base, reps, interleave, toolchain),
        "single": lambda: fast.single_source(corpus_dir, base, reps, interleave, latency_files, toolchain),
        "cutoff": lambda: fast.early_cutoff(base, reps, interleave, cuda_root()),
        "scan": lambda: scan_scaling(base, (100,) if args.quick else (1000, 10000), reps),
        "many_modules": lambda: many_modules.measure(base, (100,) if args.quick else (1000, 4000, 10000),
                                                     1 if args.quick else 48, min(reps, 3), interleave, peak_memory),
        "profile": lambda: profile(corpus_dir),
        "remote_cache": lambda: fleet.remote_cache(base, corpus_dir, reps, SCONS, timed),
        "pipelines_cold": lambda: pipelines.cold_scons(base, reps, interleave, SCONS, clean, toolchain,
                                                       6 if args.quick else None),
        "pipelines_floor": lambda: work_floor(base, "pipelines-floor", lambda folder: pipelines.write_corpus(
            folder, toolchain, count=6 if args.quick else None), reps),
        "project_floor": lambda: work_floor(base, "project-floor", lambda folder: write_corpus(
            folder, 6 if args.quick else 40), reps),
        "pipelines_processes": lambda: pipelines.processes(base, toolchain, 6 if args.quick else None),
        "pip_served": lambda: pipelines.pip_served(base, reps, interleave, toolchain, fast.ninja(),
                                                   6 if args.quick else None),
        "scaling": lambda: fleet.scaling(base, 10 if args.quick else 200, 1 if args.quick else min(reps, 2), SCONS,
                                         timed, write_corpus, (1, 2) if args.quick else (1, 2, 4)),
    }


def work_floor(base, name, write, reps):
    """pipelines.work_floor of the corpus `write(folder)` writes (returning its number of sources)."""
    folder = os.path.join(base, name)
    return pipelines.work_floor(folder, write(folder), min(reps, 3), timed, SCONS, clean)


def corpus_latency_files(corpus_dir):
    files = json.load(open(os.path.join(corpus_dir, "latency.json")))
    return [(label, source, fmt, toolkit) for label, (source, fmt, toolkit) in sorted(files.items())]


if __name__ == "__main__":
    sys.exit(main())
