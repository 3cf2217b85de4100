"""Big inputs, ours against upstream in the same run: a file of N small NVVM modules compiled cold to ISA, and a
file carrying a big dialect resource blob or a big comment (issue #33).

    python bench/many_modules.py [--sizes 1000,4000,10000] [--big-mib 48] [--reps N] [--out DIR]
                                 [--baseline DIR]

Ours: `mlirgpu compile FILE -o FILE.o --format isa` with `MLIRGPU_SERVER=off MLIRGPU_CACHE=off` (every stage
runs, in the command's own worker and the stage runners it forks). Upstream: `mlir-opt
--gpu-module-to-binary="format=isa toolkit=<CUDA>"` on the same file (it links libdevice per module, as we do).
With `--baseline DIR` (a checkout of an earlier commit, e.g. `git archive main site_scons | tar -x -C DIR`), the
same command runs that package too (`before`). Each variant's time is the median of interleaved repetitions
(bench/run.py's method); peak memory is the largest total PSS of the command's process tree, sampled in one extra
untimed run (bench/run.py's `peak_memory`).
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "site_scons"))

# Kernel bodies the modules cycle through: plain arithmetic, libdevice calls (the link stage pulls them in), f64,
# a loop (unrolled or not by the O level). `{i}` makes every symbol unique.
_BODIES = (
    """    llvm.func @k{i}(%n: i32, %a: f32, %x: !llvm.ptr<1>, %y: !llvm.ptr<1>)
        attributes {{gpu.kernel, nvvm.kernel}} {{
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %in = llvm.icmp "slt" %t, %n : i32
      llvm.cond_br %in, ^body, ^exit
    ^body:
      %j = llvm.sext %t : i32 to i64
      %px = llvm.getelementptr %x[%j] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %py = llvm.getelementptr %y[%j] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %vx = llvm.load %px : !llvm.ptr<1> -> f32
      %vy = llvm.load %py : !llvm.ptr<1> -> f32
      %m = llvm.fmul %a, %vx : f32
      %r = llvm.fadd %m, %vy : f32
      llvm.store %r, %py : f32, !llvm.ptr<1>
      llvm.br ^exit
    ^exit:
      llvm.return
    }}
""",
    """    llvm.func @__nv_expf(f32) -> f32
    llvm.func @__nv_sinf(f32) -> f32
    llvm.func @k{i}(%x: !llvm.ptr<1>) attributes {{gpu.kernel, nvvm.kernel}} {{
      %t = nvvm.read.ptx.sreg.tid.x : i32
      %j = llvm.zext %t : i32 to i64
      %p = llvm.getelementptr %x[%j] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %e = llvm.call @__nv_expf(%v) : (f32) -> f32
      %s = llvm.call @__nv_sinf(%e) : (f32) -> f32
      llvm.store %s, %p : f32, !llvm.ptr<1>
      llvm.return
    }}
""",
    """    llvm.func @__nv_sqrt(f64) -> f64
    llvm.func @k{i}(%x: !llvm.ptr<1>, %c: f64) attributes {{gpu.kernel, nvvm.kernel}} {{
      %t = nvvm.read.ptx.sreg.ctaid.x : i32
      %j = llvm.zext %t : i32 to i64
      %p = llvm.getelementptr %x[%j] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f64
      %v = llvm.load %p : !llvm.ptr<1> -> f64
      %m = llvm.fmul %v, %c : f64
      %r = llvm.call @__nv_sqrt(%m) : (f64) -> f64
      llvm.store %r, %p : f64, !llvm.ptr<1>
      llvm.return
    }}
""",
    """    llvm.func @k{i}(%x: !llvm.ptr<1>, %n: i32) attributes {{gpu.kernel, nvvm.kernel}} {{
      %z = llvm.mlir.constant(0 : i32) : i32
      %one = llvm.mlir.constant(1 : i32) : i32
      %k = llvm.mlir.constant({i} : i32) : i32
      llvm.br ^loop(%z, %z : i32, i32)
    ^loop(%c: i32, %acc: i32):
      %more = llvm.icmp "slt" %c, %n : i32
      llvm.cond_br %more, ^step, ^done
    ^step:
      %m = llvm.mul %c, %k : i32
      %a = llvm.add %acc, %m : i32
      %c1 = llvm.add %c, %one : i32
      llvm.br ^loop(%c1, %a : i32, i32)
    ^done:
      llvm.store %acc, %x : i32, !llvm.ptr<1>
      llvm.return
    }}
""",
)
_CHIPS = ("sm_80", "sm_90")


def write_many(path, count):
    """A file of `count` small NVVM modules (@m0, @m1, ...), each with its own target attribute: bodies, chips
    and O levels vary from module to module."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("module attributes {gpu.container_module} {\n")
        for i in range(count):
            chip, level = _CHIPS[i // 4 % 2], i // 8 % 4
            handle.write(f'  gpu.module @m{i} [#nvvm.target<chip = "{chip}", O = {level}>] {{\n'
                         + _BODIES[i % len(_BODIES)].format(i=i) + "  }\n")
        handle.write("}\n")
    return path


def write_big(path, kind, mib):
    """One small module and `mib` MiB of a dialect resource blob after the top module (`kind` "blob": data the
    device code does not use, such as the host's weights) or of line comments before it (`kind` "comment")."""
    size = mib << 20
    with open(path, "w", encoding="utf-8") as handle:
        if kind == "comment":
            line = "// " + "x" * 76 + "\n"
            handle.write(line * (size // len(line)))
        handle.write("module attributes {gpu.container_module} {\n"
                     '  gpu.module @big [#nvvm.target<chip = "sm_80">] {\n'
                     + _BODIES[0].format(i=0) + "  }\n}\n")
        if kind == "blob":
            elements = (size - 32) // 8  # two hex digits per byte, four bytes per element
            handle.write('{-#\n  dialect_resources: {\n    builtin: {\n      weights: "0x04000000')
            chunk = "0000803F" * 4096
            for _ in range(elements // 4096):
                handle.write(chunk)
            handle.write('"\n    }\n  }\n#-}\n')
    return path


def _commands(path, toolkit, toolchain, baseline):
    mlirgpu = os.path.join(os.path.dirname(sys.executable), "mlirgpu")
    ours = [mlirgpu, "compile", path, "-o", path + ".o", "--format", "isa", "--toolkit", toolkit]
    upstream = [toolchain.llvm_tool("mlir-opt"), path, f"--gpu-module-to-binary=format=isa toolkit={toolkit}", "-o",
                path + ".upstream.mlir"]
    commands = {"ours": ours, "upstream": upstream}
    if baseline:  # the same command running the package of another checkout (its workers inherit the path)
        commands["before"] = ["env", f"PYTHONPATH={os.path.join(baseline, 'site_scons')}", *ours[:4],
                              path + ".before.o", *ours[5:]]
    return {name: (argv, os.path.dirname(path), None) for name, argv in commands.items()}


def measure(base, sizes, big_mib, reps, interleave, peak_memory, baseline=None):
    """{case: {ours, upstream (and before): timing summary with peak PSS (KiB)}, ratios}: N modules for each of
    `sizes`, then the blob and comment files of `big_mib` MiB. `baseline`: a checkout of an earlier version, whose
    package runs as `before`."""
    from mlirgpu.llvm import toolchain
    from mlirgpu.targets.cuda import cuda_toolkit

    toolkit = cuda_toolkit()
    os.environ.update(MLIRGPU_CACHE="off", MLIRGPU_SERVER="off")
    cases = [(f"{size} modules", lambda path, size=size: write_many(path, size)) for size in sizes]
    cases += [(f"{big_mib} MiB {kind}", lambda path, kind=kind: write_big(path, kind, big_mib))
              for kind in ("blob", "comment")]
    out = {}
    for label, write in cases:
        folder = os.path.join(base, label.replace(" ", "_"))
        os.makedirs(folder, exist_ok=True)
        path = write(os.path.join(folder, "input.mlir"))
        variants = _commands(path, toolkit, toolchain, baseline)
        result = interleave(variants, reps, lambda name, cwd: None)
        for name, (argv, cwd, _env) in variants.items():
            result[name]["peak_pss_kib"] = peak_memory(argv, cwd)
        result["time_ratio"] = result["ours"]["median"] / result["upstream"]["median"]
        result["memory_ratio"] = result["ours"]["peak_pss_kib"] / result["upstream"]["peak_pss_kib"]
        out[label] = result
    return out


def report(results):
    before = any("before" in result for result in results.values())
    lines = ["| input | ours | upstream | time ratio | peak PSS ours / upstream | memory ratio |"
             + (" before: time, peak PSS |" if before else ""),
             "|---|---|---|---|---|---|" + ("---|" if before else "")]
    for label, result in results.items():
        ours, upstream = result["ours"], result["upstream"]
        line = (f"| {label} | {ours['median']:.2f} s ({ours['min']:.2f}-{ours['max']:.2f}) | "
                f"{upstream['median']:.2f} s ({upstream['min']:.2f}-{upstream['max']:.2f}) | "
                f"{result['time_ratio']:.2f} | {ours['peak_pss_kib'] / 1024:.0f} / "
                f"{upstream['peak_pss_kib'] / 1024:.0f} MiB | {result['memory_ratio']:.2f} |")
        if "before" in result:
            line += (f" {result['before']['median']:.2f} s ({result['before']['median'] / upstream['median']:.2f}x), "
                     f"{result['before']['peak_pss_kib'] / 1024:.0f} MiB |")
        lines.append(line)
    return "\n".join(lines)


def main(argv=None):
    import run  # bench/run.py: the interleaved timing and the PSS sampler

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000,10000", help="module counts, comma-separated")
    parser.add_argument("--big-mib", type=int, default=48, help="size of the blob and comment files")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(HERE, "out"))
    parser.add_argument("--baseline", help="a checkout of an earlier version (a worktree, an archive) to run too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mlirgpu-many-") as base:
        results = measure(base, [int(size) for size in args.sizes.split(",")], args.big_mib, args.reps,
                          run.interleave, run.peak_memory, args.baseline and os.path.abspath(args.baseline))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "many_modules.json"), "w") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
