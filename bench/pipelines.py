"""Benchmarks on sources nobody here wrote for the benchmark, and through a pip user's installation.

The corpus is tests/corpus/pipelines: 44 sources in the style of MLIR's GPU integration tests (host code that
launches kernels), each lowered by its own RUN line's pipeline (NVVM, ROCDL and XeVM). The upstream chain per
source is that RUN line's `mlir-opt` (or chain of them), `mlir-translate --mlir-to-llvmir`, `llc -filetype=obj`;
ours compiles it with the RUN line's flags as `GPU_LOWERING` / `--lowering`, writing every dump.

- Cold clean SCons build: `scons -j2 DUMP=1` (no stage cache, no compile server) against `make -j2` running the
  upstream chain.
- A pip user: the wheel of this checkout (built by `python -m build`) installed by pip into a fresh venv, no
  bootstrap; Ninja (-j2) runs one `mlirgpu compile` per source with dumps through the command a build recipe
  finds (`mlirgpu --launcher`, else the venv's `mlirgpu`), the installation's compile server warm; and one
  medium source compiled that way, against the upstream chain.
"""
import glob
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PIPELINES = os.path.join(ROOT, "tests", "corpus", "pipelines")
sys.path.insert(0, os.path.join(ROOT, "tests"))

from runlines import mlir_opt_runs, run_line  # noqa: E402

# The one source of the single-source row: a medium kernel (a reduction in host code and a kernel).
SINGLE = "all_reduce_add"


def _escape(text):
    return text.replace("$", "$$")  # for make and Ninja alike


def upstream_chain(source, output, flags, toolchain):
    """The shell command of upstream's chain for one source of the corpus."""
    runs = mlir_opt_runs(flags)
    opt = toolchain.llvm_tool("mlir-opt")
    steps = [" ".join([opt, shlex.quote(source)] + [shlex.quote(word) for word in runs[0]])]
    steps += [" ".join([opt] + [shlex.quote(word) for word in run]) for run in runs[1:]]
    host = shlex.quote(output + ".ll")
    steps.append(f"{toolchain.llvm_tool('mlir-translate')} --mlir-to-llvmir -o {host}")
    # Async host code (coroutines) is split by LLVM's O0 pipeline first, as mlir-runner's JIT and our host object do.
    return (" | ".join(steps) + f" && {{ ! grep -q '@llvm\\.coro\\.' {host} || {toolchain.llvm_tool('opt')} -O0 "
            f"{host} -S -o {host}; }} && {toolchain.llvm_tool('llc')} -filetype=obj {host} -o {shlex.quote(output)}")


def write_corpus(folder, toolchain, mlirgpu=None, ours_ninja="ours.ninja", count=None):
    """The corpus in `folder`: its sources, an SConstruct (GpuObject with the RUN line's GPU_LOWERING), upstream.mk,
    and, with `mlirgpu` (the command to run), `ours_ninja` and upstream.ninja; about `count` sources spread over
    the corpus (all by default; SINGLE always). Returns the number of sources."""
    os.makedirs(folder, exist_ok=True)
    names = sorted(name[: -len(".mlir")] for name in os.listdir(PIPELINES) if name.endswith(".mlir"))
    names = sorted(set(names[:: max(1, len(names) // count)] if count else names) | {SINGLE})
    tools = os.path.join(ROOT, "site_scons", "site_tools")
    sconstruct = ["DefaultEnvironment(tools=[])", f"env = Environment(tools=['mlirgpu'], toolpath=[{tools!r}])"]
    make = [f"all: {' '.join(f'out/{name}.o' for name in names)}", "out:", "\tmkdir -p out"]
    ours = ["rule mlirgpu", f"  command = {mlirgpu} compile $in -o $out --lowering $flags --dump-intermediates "
            "$out.dumps --header $out.h --depfile $out.d", "  depfile = $out.d", ""]
    upstream = ["rule upstream", "  command = $chain", ""]
    for name in names:
        shutil.copy(os.path.join(PIPELINES, name + ".mlir"), folder)
        flags = run_line(os.path.join(PIPELINES, name + ".mlir"))
        chain = _escape(upstream_chain(f"{name}.mlir", f"out/{name}.o", flags, toolchain))
        sconstruct.append(f"env.GpuObject('out/{name}', '{name}.mlir', GPU_LOWERING={flags!r})")
        make += [f"out/{name}.o: {name}.mlir | out", f"\t{chain}"]
        ours += [f"build out/{name}.o: mlirgpu {name}.mlir", f"  flags = {_escape(shlex.quote(flags))}"]
        upstream += [f"build out/{name}.o: upstream {name}.mlir", f"  chain = {chain}"]
    files = {"SConstruct": sconstruct, "upstream.mk": make}
    if mlirgpu:
        files.update({ours_ninja: ours, "upstream.ninja": upstream})
    for name, lines in files.items():
        with open(os.path.join(folder, name), "w") as handle:
            handle.write("\n".join(lines) + "\n")
    return len(names)


def cold_scons(base, reps, interleave, scons, clean, toolchain, count=None):
    """`scons -j2 DUMP=1` of the corpus from clean (no stage cache, no server) against `make -j2` upstream."""
    folder = os.path.join(base, "pipelines")
    count = write_corpus(folder, toolchain, count=count)
    env = dict(os.environ, MLIRGPU_CACHE="off", MLIRGPU_SERVER="off")
    subprocess.run(scons + ["-Q", "-j2", "DUMP=1"], cwd=folder, env=env, check=True, capture_output=True)  # warm
    result = interleave({"ours scons -j2 DUMP=1": (scons + ["-Q", "-j2", "DUMP=1"], folder, env),
                         "upstream make -j2": (["make", "-s", "-j2", "-f", "upstream.mk"], folder, env)},
                        reps, lambda name, cwd: clean(cwd))
    result["sources"] = count
    return result


# The stages of ours that do work upstream's chain does too: in-process LLVM (upstream's mlir-opt runs the same
# passes), the host object's code generation (upstream's llc); the tools' runs count whole.
_SHARED_STAGES = ("initial.ll", "linked.ll", "opt.ll", "isa", "embed")


def work_floor(folder, count, reps, timed, scons, clean):
    """What a cold build cannot go below, for the corpus of `count` sources in `folder` (an SConstruct and
    upstream.mk): one CPU (-j1), no stage cache or server, ours with MLIRGPU_PROFILE. The work both chains do
    (every tool run: mlir-opt's lowering, mlir-translate, ptxas, fatbinary, ld.lld; the LLVM stages and the host
    object's code generation) against upstream's whole chain, in CPU seconds (timed: perf's task-clock of the
    process tree). What is left of ours is the orchestration: SCons, the workers' Python, cutting modules,
    printing and writing dumps. Medians over `reps` builds of each."""
    profile = folder + ".profile.jsonl"
    env = dict(os.environ, MLIRGPU_CACHE="off", MLIRGPU_SERVER="off", MLIRGPU_PROFILE=profile)
    subprocess.run(scons + ["-Q", "-j2", "DUMP=1"], cwd=folder, env=env, check=True, capture_output=True)  # warm
    ours, upstream, shared, tools = [], [], [], []
    for _ in range(reps):
        clean(folder)
        if os.path.exists(profile):
            os.unlink(profile)
        ours.append(timed(scons + ["-Q", "-j1", "DUMP=1"], folder, env)[1])
        clean(folder)
        upstream.append(timed(["make", "-s", "-j1", "-f", "upstream.mk"], folder, env)[1])
        with open(profile, encoding="utf-8") as handle:
            entries = [json.loads(line) for line in handle]
        tools.append(sum(seconds for entry in entries for _runs, seconds in entry["tools"].values()))
        shared.append(tools[-1] + sum(entry["stages"].get(stage, 0.0) for entry in entries
                                      for stage in _SHARED_STAGES))
    return {"sources": count, "reps": reps, "ours_cpu": statistics.median(ours),
            "upstream_cpu": statistics.median(upstream), "tools": statistics.median(tools),
            "shared_work": statistics.median(shared)}


# The tools of both chains that load LLVM or MLIR: a process start of each costs tens of milliseconds.
_LLVM_TOOLS = ("mlir-opt", "mlir-translate", "opt", "llc", "llvm-link")


def _llvm_tool(program):
    return re.sub(r"-\d+$", "", os.path.basename(program)) in _LLVM_TOOLS


def processes(base, toolchain, count=None):
    """Tool processes per source of the corpus (about `count` of its sources): ours from each compile's trace
    event (`mlirgpu compile --trace`, no stage cache or server), upstream's from its chain (each mlir-opt of the
    RUN line, mlir-translate, llc, and opt where the host code holds coroutines). LLVM/MLIR tools apart (ptxas
    and fatbinary run in both: upstream's mlir-opt starts them)."""
    folder = os.path.join(base, "processes")
    write_corpus(folder, toolchain, count=count)
    env = dict(os.environ, MLIRGPU_CACHE="off", MLIRGPU_SERVER="off")
    ours, ours_llvm, upstream = [], [], []
    for name in sorted(entry[: -len(".mlir")] for entry in os.listdir(folder) if entry.endswith(".mlir")):
        flags = run_line(os.path.join(PIPELINES, name + ".mlir"))
        trace = os.path.join(folder, name + ".trace.json")
        subprocess.run([sys.executable, "-m", "mlirgpu", "compile", name + ".mlir", "-o", name + ".o", "--lowering",
                        flags, "--dump-intermediates", name + ".dumps", "--trace", trace], cwd=folder, env=env,
                       check=True, capture_output=True)
        with open(trace, encoding="utf-8") as handle:
            event = next(e for e in json.load(handle)["traceEvents"] if e.get("cat") == "compile")
        ours.append(event["args"]["processes"])
        ours_llvm.append(sum(runs for program, runs in event["args"]["tools"].items() if _llvm_tool(program)))
        subprocess.run(["sh", "-c", upstream_chain(name + ".mlir", name + ".up.o", flags, toolchain)], cwd=folder,
                       env=env, check=True, capture_output=True)
        with open(os.path.join(folder, name + ".up.o.ll"), encoding="utf-8") as handle:
            coroutines = "@llvm.coro." in handle.read()
        upstream.append(len(mlir_opt_runs(flags)) + 2 + coroutines)
    return {"sources": len(ours), "ours": sum(ours) / len(ours), "ours_llvm": sum(ours_llvm) / len(ours),
            "upstream_llvm": sum(upstream) / len(upstream)}


def pip_venv(base):
    """A fresh venv with this checkout's wheel installed by pip, as a user installs it (no bootstrap)."""
    work = os.path.join(base, "pip")
    source = os.path.join(work, "src")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "build", "__pycache__", "*.dumps",
                                                                "out"))
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", os.path.join(work, "dist"), source],
                   check=True, capture_output=True)
    venv = os.path.join(work, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", *glob.glob(os.path.join(work, "dist", "*.whl"))],
                   check=True, capture_output=True)
    return venv


def user_environment(venv, base):
    """A pip user's environment: the venv's bin first on PATH, nothing of this checkout, a server folder and
    user cache of the benchmark's own, the stage cache off (these rows measure compiling)."""
    server = os.path.join(base, "pip-server")
    os.makedirs(server, mode=0o700, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PATH=os.path.join(venv, "bin") + os.pathsep + env.get("PATH", ""), MLIRGPU_SERVER="on",
               MLIRGPU_SERVER_DIR=server, MLIRGPU_CACHE="off", MLIRGPU_SERVER_IDLE="900",
               XDG_CACHE_HOME=os.path.join(base, "pip-user-cache"))
    return env


def found_command(venv, env):
    """The `mlirgpu` command a recipe finds for this installation: what `mlirgpu --launcher` prints (the native
    launcher), or the venv's script where the installation has no such option."""
    script = os.path.join(venv, "bin", "mlirgpu")
    asked = subprocess.run([script, "--launcher"], env=env, capture_output=True, text=True)
    found = asked.stdout.strip()
    return found if asked.returncode == 0 and found and os.access(found, os.X_OK) else script


def pip_served(base, reps, interleave, toolchain, ninja, count=None):
    """A pip user's Ninja build of the corpus (its first `count` sources) and one source, with the
    installation's server warm."""
    venv = pip_venv(base)
    env = user_environment(venv, base)
    command = found_command(venv, env)
    folder = os.path.join(base, "pip-corpus")
    script = os.path.join(venv, "bin", "mlirgpu")
    write_corpus(folder, toolchain, mlirgpu=script, ours_ninja="script.ninja", count=count)  # before --launcher
    count = write_corpus(folder, toolchain, mlirgpu=command, count=count)
    server = [os.path.join(venv, "bin", "mlirgpu"), "server"]
    subprocess.run(server + ["start"], env=env, check=True, capture_output=True)

    def clean(name, cwd):
        for entry in ("out", ".ninja_log", ".ninja_deps"):
            path = os.path.join(cwd, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.path.exists(path) and os.unlink(path)
        os.makedirs(os.path.join(cwd, "out"))

    try:
        clean(None, folder)
        subprocess.run([ninja, "-j2", "-f", "ours.ninja"], cwd=folder, env=env, check=True, capture_output=True)
        result = interleave({"ninja ours, pip, server warm": ([ninja, "-j2", "-f", "ours.ninja"], folder, env),
                             "ninja ours, pip's Python script": ([ninja, "-j2", "-f", "script.ninja"], folder, env),
                             "ninja upstream": ([ninja, "-j2", "-f", "upstream.ninja"], folder, env)}, reps, clean)
        source = SINGLE + ".mlir"
        flags = run_line(os.path.join(PIPELINES, source))
        one = [command, "compile", source, "-o", "one.o", "--lowering", flags, "--dump-intermediates", "one.dumps"]
        subprocess.run(one, cwd=folder, env=env, check=True, capture_output=True)
        upstream = ["sh", "-c", upstream_chain(source, "one-up.o", flags, toolchain)]
        result["single"] = interleave({"ours, pip, server warm": (one, folder, env),
                                       "ours, pip's Python script": ([script] + one[1:], folder, env),
                                       "upstream": (upstream, folder, env)}, reps, lambda name, cwd: None)
    finally:
        subprocess.run(server + ["stop"], env=env, capture_output=True)
    result.update(sources=count, command=os.path.basename(os.path.dirname(command)) + "/" + os.path.basename(command),
                  native=command != script)
    return result


def report(results, paired):
    lines = []
    cold = results.get("pipelines_cold")
    if cold:
        value = paired(cold["ours scons -j2 DUMP=1"], cold["upstream make -j2"])
        lines.append(f"Upstream-style corpus ({cold['sources']} RUN-line sources), cold clean build -j2 with dumps: "
                     f"ours {cold['ours scons -j2 DUMP=1']['median']:.2f} s / upstream "
                     f"{cold['upstream make -j2']['median']:.2f} s = {value['median']:.2f} "
                     f"({value['min']:.2f}-{value['max']:.2f})")
    counted = results.get("pipelines_processes")
    if counted:
        lines.append(f"Tool processes per source, upstream-style corpus ({counted['sources']} sources): LLVM/MLIR tools "
                     f"ours {counted['ours_llvm']:.2f} / upstream's chain {counted['upstream_llvm']:.2f}; all of ours "
                     f"(ptxas, fatbinary too) {counted['ours']:.2f}")
    for key, corpus in (("pipelines_floor", "upstream-style corpus"), ("project_floor", "project corpus")):
        if key in results:
            lines.append(_floor_line(results[key], corpus))
    pip = results.get("pip_served")
    if pip:
        lines.append(f"Pip-installed, server warm, upstream-style corpus ({pip['sources']} sources): median s, "
                     "ours/upstream per repetition")
        single = pip["single"]
        for label, ninja_name, one_name in (
                (f"{'native launcher' if pip['native'] else 'Python script'} ({pip['command']})",
                 "ninja ours, pip, server warm", "ours, pip, server warm"),
                ("pip's Python script", "ninja ours, pip's Python script", "ours, pip's Python script")):
            value = paired(pip[ninja_name], pip["ninja upstream"])
            one = paired(single[one_name], single["upstream"])
            lines.append(f"  {label}: Ninja -j2 {pip[ninja_name]['median']:.2f} / {pip['ninja upstream']['median']:.2f}"
                         f" = {value['median']:.2f} ({value['min']:.2f}-{value['max']:.2f}); one source ({SINGLE}) "
                         f"{single[one_name]['median']:.3f} / {single['upstream']['median']:.3f} = "
                         f"{one['median']:.2f} ({one['min']:.2f}-{one['max']:.2f})")
    return lines


def _floor_line(floor, corpus):
    per = 1000 / floor["sources"]
    return (f"Work floor, {corpus} ({floor['sources']} sources, -j1, CPU ms per source): upstream "
            f"{floor['upstream_cpu'] * per:.1f}; ours {floor['ours_cpu'] * per:.1f} "
            f"({floor['ours_cpu'] / floor['upstream_cpu']:.2f}x), of which work upstream does too "
            f"{floor['shared_work'] * per:.1f} ({floor['shared_work'] / floor['upstream_cpu']:.2f}x; the tools' runs "
            f"{floor['tools'] * per:.1f})")
