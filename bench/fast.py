"""Benchmarks of the compile server and the stage cache, as ratios against the upstream chain in the same run.

- Ninja-style full build: Ninja (-j2) runs one `mlirgpu compile` (dumps, header, depfile) per source, against
  Ninja running the upstream chain per source; ours in process (MLIRGPU_SERVER=off), with a warm server, and
  with the server stopped before each build (a cold start). The stage cache is off: these measure compiling.
- One source: `mlirgpu compile` with a warm server (cache off) against the upstream chain.
- Early cutoff: a file of 20 modules compiled cold (empty cache) against the same file after one module was
  edited (cache warm from the file before the edit), and a comment-only edit, with the stages each ran.
- SCons, one source of 200 edited, with a warm server, against SCons's null-build floor for that project plus
  the upstream chain for that source.
Every variant gets its own cache and server folders; nothing of the user's is read or written.
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The `mlirgpu` command as users run it (the virtual environment's script; `python -m` adds runpy's imports).
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "mlirgpu")
MLIRGPU = [_SCRIPT] if os.access(_SCRIPT, os.X_OK) else [sys.executable, "-m", "mlirgpu"]


def environment(base, server, cache):
    """The environment of one kind of run: its own server and cache folders under `base`."""
    folder = os.path.join(base, "server")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), MLIRGPU_SERVER="on" if server else "off",
                MLIRGPU_SERVER_DIR=folder, MLIRGPU_CACHE="on" if cache else "off",
                MLIRGPU_CACHE_DIR=os.path.join(base, "cache"), MLIRGPU_SERVER_IDLE="900")


def server(env, action):
    subprocess.run(MLIRGPU + ["server", action], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_ninja(corpus_dir, toolchain):
    """ours.ninja and upstream.ninja: one edge per source, with the formats and toolkits of upstream.mk."""
    make = open(os.path.join(corpus_dir, "upstream.mk")).read()
    entries = re.findall(r"^out/(\S+)\.o: \S+\.mlir \| out\n\t\$\(MLIR_OPT\) \$< "
                         r"'--gpu-module-to-binary=format=(\S+) toolkit=(\S+)'", make, re.M)
    lines_ours = ["rule mlirgpu",
                  f"  command = {' '.join(MLIRGPU)} compile $in -o $out --format $fmt --toolkit $toolkit "
                  "--dump-intermediates $out.dumps --header $out.h --depfile $out.d",
                  "  depfile = $out.d", ""]
    lines_up = ["rule upstream",
                f"  command = {toolchain.llvm_tool('mlir-opt')} $in '--gpu-module-to-binary=format=$fmt "
                f"toolkit=$toolkit' -o $out.bin.mlir && {toolchain.llvm_tool('mlir-translate')} --mlir-to-llvmir "
                f"$out.bin.mlir -o $out.ll && {toolchain.llvm_tool('llc')} -filetype=obj $out.ll -o $out", ""]
    for name, fmt, toolkit in entries:
        for lines, rule in ((lines_ours, "mlirgpu"), (lines_up, "upstream")):
            lines += [f"build out/{name}.o: {rule} {name}.mlir", f"  fmt = {fmt}", f"  toolkit = {toolkit}"]
    for name, lines in (("ours.ninja", lines_ours), ("upstream.ninja", lines_up)):
        with open(os.path.join(corpus_dir, name), "w") as handle:
            handle.write("\n".join(lines) + "\n")
    return len(entries)


def ninja():
    return shutil.which("ninja", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


def clean_ninja(corpus_dir):
    for name in ("out", ".ninja_log", ".ninja_deps"):
        path = os.path.join(corpus_dir, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)
    os.makedirs(os.path.join(corpus_dir, "out"))


def ninja_builds(corpus_dir, base, reps, interleave, toolchain):
    write_ninja(corpus_dir, toolchain)
    warm = environment(os.path.join(base, "warm"), server=True, cache=False)
    cold = environment(os.path.join(base, "cold"), server=True, cache=False)
    off = environment(os.path.join(base, "off"), server=False, cache=False)
    server(warm, "start")
    clean_ninja(corpus_dir)  # a warm server has compiled before (its first commands fill the tool caches)
    subprocess.run([ninja(), "-j2", "-f", "ours.ninja"], cwd=corpus_dir, env=warm, check=True, capture_output=True)
    variants = {
        "ninja ours, server warm": ([ninja(), "-j2", "-f", "ours.ninja"], corpus_dir, warm),
        "ninja ours, server cold": ([ninja(), "-j2", "-f", "ours.ninja"], corpus_dir, cold),
        "ninja ours, in process": ([ninja(), "-j2", "-f", "ours.ninja"], corpus_dir, off),
        "ninja upstream": ([ninja(), "-j2", "-f", "upstream.ninja"], corpus_dir, None),
    }

    def prepare(name, cwd):
        clean_ninja(cwd)
        if name == "ninja ours, server cold":
            server(cold, "stop")
        elif name == "ninja ours, server warm":
            server(warm, "start")

    try:
        return interleave(variants, reps, prepare)
    finally:
        server(warm, "stop")
        server(cold, "stop")


def single_source(corpus_dir, base, reps, interleave, files, toolchain):
    warm = environment(os.path.join(base, "single"), server=True, cache=False)
    server(warm, "start")
    out = {}
    try:
        for label, source, fmt, toolkit in files:
            ours = MLIRGPU + ["compile", source, "-o", "one.o", "--format", fmt, "--dump-intermediates", "one.dumps",
                              "--toolkit", toolkit]
            upstream = ["sh", "-c", f"{toolchain.llvm_tool('mlir-opt')} {source} "
                        f"'--gpu-module-to-binary=format={fmt} toolkit={toolkit}' -o one.bin.mlir && "
                        f"{toolchain.llvm_tool('mlir-translate')} --mlir-to-llvmir one.bin.mlir -o one.ll && "
                        f"{toolchain.llvm_tool('llc')} -filetype=obj one.ll -o one-up.o"]
            subprocess.run(ours, cwd=corpus_dir, env=warm, check=True, capture_output=True)  # warm: it has served
            out[label] = interleave({"ours, server warm": (ours, corpus_dir, warm),
                                     "upstream": (upstream, corpus_dir, None)}, reps, lambda name, cwd: None)
    finally:
        server(warm, "stop")
    return out


MODULE = """\
  gpu.module @m{index} [#nvvm.target<chip = "sm_80", O = 3>] {{
    llvm.func @__nv_expf(f32) -> f32
    llvm.func @k{index}(%n: i32, %p: !llvm.ptr<1>, %x: f32) attributes {{gpu.kernel, nvvm.kernel}} {{
      %tid = nvvm.read.ptx.sreg.tid.x : i32
      %bid = nvvm.read.ptx.sreg.ctaid.x : i32
      %bdim = nvvm.read.ptx.sreg.ntid.x : i32
      %0 = llvm.mul %bid, %bdim : i32
      %i = llvm.add %0, %tid : i32
      %inb = llvm.icmp "slt" %i, %n : i32
      llvm.cond_br %inb, ^body, ^exit
    ^body:
      %idx = llvm.sext %i : i32 to i64
      %q = llvm.getelementptr %p[%idx] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %q : !llvm.ptr<1> -> f32
      %s = llvm.mlir.constant({scale} : f32) : f32
      %w = llvm.fmul %v, %s : f32
      %y = llvm.fadd %w, %x : f32
      %e = llvm.call @__nv_expf(%y) : (f32) -> f32
      llvm.store %e, %q : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }}{comment}
  }}
"""


def twenty_modules(scale_of=None, comment_in=None):
    body = "".join(MODULE.format(index=i, scale=f"{float((scale_of or {}).get(i, i + 1)):.1f}",
                                 comment="\n    // a comment" if i == comment_in else "") for i in range(20))
    return "module attributes {gpu.container_module} {\n" + body + "}\n"


def early_cutoff(base, reps, interleave, cuda):
    """A file of 20 modules: its cold compile (empty cache) against a compile after one module changed (the
    cache holds the file before the change), and after a comment-only edit; with the stages each ran."""
    folder = os.path.join(base, "cutoff")
    os.makedirs(folder, exist_ok=True)
    env = environment(os.path.join(base, "cutoff-env"), server=True, cache=True)
    server(env, "start")
    argv = MLIRGPU + ["compile", "many.mlir", "-o", "many.o", "--format", "fatbin", "--toolkit", cuda,
                      "--dump-intermediates", "many.dumps"]
    counter = [0]

    def prepare(name, cwd):
        counter[0] += 1
        path = os.path.join(cwd, "many.mlir")
        if name == "cold: every module":
            shutil.rmtree(env["MLIRGPU_CACHE_DIR"], ignore_errors=True)
            text = twenty_modules({0: 1000.0 + counter[0]})
        else:
            before = {0: 1000.0 + counter[0], 7: 2000.0 + counter[0]}
            with open(path, "w") as handle:
                handle.write(twenty_modules(before))
            subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)  # the cache before the edit
            text = (twenty_modules({**before, 7: 3000.0 + counter[0]}) if name == "one module edited"
                    else twenty_modules(before, comment_in=7))
        with open(path, "w") as handle:
            handle.write(text)

    try:
        result = {}
        for name in ("cold: every module", "one module edited", "comment-only edit"):
            result[name] = interleave({name: (argv, folder, env)}, reps, prepare)[name]
            record = json.load(open(os.path.join(folder, "many.dumps", "mlirgpu.json")))
            result[name]["ran"] = sum(1 for job in record["jobs"] for how in job["stages"].values() if how == "ran")
            result[name]["modules_run"] = sum(1 for job in record["jobs"] if "ran" in job["stages"].values())
        return result
    finally:
        server(env, "stop")


def scons_one_edited(project, base, reps, interleave, scons, write_floor, toolchain):
    """One source of the incremental project edited: SCons with a warm server against SCons's null build of the
    same targets (floor) plus the upstream chain for that one source."""
    env = environment(os.path.join(base, "scons-env"), server=True, cache=False)
    server(env, "start")
    subprocess.run(scons + ["-Q", "-j2", "DUMP=1"], cwd=project, env=env, check=True, capture_output=True)
    floor = os.path.join(base, "incr-floor")
    write_floor(floor, project)
    subprocess.run(scons + ["-Q", "-j2"], cwd=floor, check=True, capture_output=True)
    victim = sorted(f for f in os.listdir(project) if f.endswith(".mlir"))[len(os.listdir(project)) // 4]
    make = open(os.path.join(project, "upstream.mk")).read()
    fmt, toolkit = re.search(rf"^out/{re.escape(victim[:-5])}\.o: .*\n\t\$\(MLIR_OPT\) \$< "
                             r"'--gpu-module-to-binary=format=(\S+) toolkit=(\S+)'", make, re.M).groups()
    upstream = ["sh", "-c", f"{toolchain.llvm_tool('mlir-opt')} {victim} "
                f"'--gpu-module-to-binary=format={fmt} toolkit={toolkit}' -o one.bin.mlir && "
                f"{toolchain.llvm_tool('mlir-translate')} --mlir-to-llvmir one.bin.mlir -o one.ll && "
                f"{toolchain.llvm_tool('llc')} -filetype=obj one.ll -o one-up.o"]

    def touch(name, cwd):
        if name != "ours, server warm":
            return
        path = os.path.join(cwd, victim)
        text = open(path).read()
        with open(path, "w") as handle:
            handle.write(text + "// touched\n" if not text.endswith("// touched\n") else text[: -len("// touched\n")])

    try:
        return interleave({"ours, server warm": (scons + ["-Q", "-j2", "DUMP=1"], project, env),
                           "floor null build": (scons + ["-Q", "-j2"], floor, None),
                           "upstream, one source": (upstream, project, None)}, reps, touch)
    finally:
        server(env, "stop")
