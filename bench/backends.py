"""Per-stage backend: llvmlite's LLVM in this process against Debian's release `opt-22`/`llc-22` as processes, on
the same modules (issue 40).

    python bench/backends.py [--reps N] [--scales 1,8,32] [--batch 200] [--out DIR]

The modules: tests/corpus/saxpy.{nvvm,rocdl,xevm}.mlir (small), and tests/corpus/many_kernels.{nvvm,rocdl}.mlir
(34 kernels) with their kernels repeated `scale` times in one gpu.module (medium, large), compiled once with dumps
(`mlirgpu compile --dump-intermediates`) for their `linked.ll` and `opt.ll`. Then, per module and stage:
- opt.ll, in process: `mlirgpu.llvm.ops.optimize` on the parsed linked module (the parse not counted: the stage
  receives a module); as a tool: the module written as bitcode, `opt -O<n> -mcpu=...` on it, its bitcode output
  read back into a module (what a stage would pay);
- isa, in process: `ops.emit_assembly`; as a tool: the module as bitcode, `llc -O<n> -mcpu=... -asm-verbose=false`
  on it, the assembly read; the tool's assembly is checked byte-identical to the in-process one.
The last row: the NVVM saxpy module's stages run `--batch` times in a row (a file of many small modules: each
pays a tool's start-up). Each cell is the median of `--reps` interleaved repetitions, wall and CPU seconds
(user+sys of this process and of the children it waited for: the tool, or the fork of SPIR-V code generation).
"""
import argparse
import os
import re
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

from mlirgpu.llvm import arena as llvm_arena, toolchain  # noqa: E402

_CASES = (("saxpy.nvvm", "sm_80", False), ("saxpy.rocdl", "gfx942", False), ("saxpy.xevm", "", False),
          ("many_kernels.nvvm", "sm_90", True), ("many_kernels.rocdl", "gfx942", True))
_TRIPLE = re.compile(r'^target triple = "([^"]+)"', re.M)
_GPU_MODULE = re.compile(r"(  gpu\.module @\w+ \[[^\n]*\] \{\n)(.*?)(\n  \}\n)", re.S)


def write_source(folder, stem, chip, scale):
    """The corpus file `stem` at `chip`, O3, its gpu.module's functions repeated `scale` times (renamed)."""
    with open(os.path.join(ROOT, "tests", "corpus", stem + ".mlir"), encoding="utf-8") as handle:
        text = handle.read().replace("@CHIP@", chip or "pvc").replace("@O@", "3")
    match = _GPU_MODULE.search(text)
    body = "\n".join(re.sub(r"@(ew_\w+|saxpy)\b", rf"@\1_r{copy}", match.group(2)) for copy in range(scale))
    path = os.path.join(folder, f"{stem}.x{scale}.mlir")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text[: match.start(2)] + body + text[match.end(2) :])
    return path


def dumps(path):
    """The `linked.ll` and `opt.ll` dumps of the one module of `path`."""
    folder = path + ".dumps"
    env = dict(os.environ, MLIRGPU_SERVER="off", MLIRGPU_CACHE="off")
    mlirgpu = os.path.join(os.path.dirname(sys.executable), "mlirgpu")
    subprocess.run([mlirgpu, "compile", path, "-o", path + ".o", "--format", "isa", "--dump-intermediates", folder],
                   check=True, env=env)
    (linked,) = [name for name in os.listdir(folder) if name.endswith(".linked.ll")]
    read = lambda name: open(os.path.join(folder, name), encoding="utf-8").read()  # noqa: E731
    return read(linked), read(linked.replace(".linked.ll", ".opt.ll"))


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tool(argv, data):
    """The stdout bytes of `argv` fed `data` on stdin."""
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE, check=True).stdout


def _module(ir, triple, chip):
    from mlirgpu.llvm import ops

    return ops.parse(ir, triple, chip, "", 3)


def _flags(stage, chip):
    return ["-O3"] + ([f"-mcpu={chip}"] if chip else []) + (["-asm-verbose=false"] if stage == "isa" else [])


def run_stage(stage, way, ir, triple, chip, times=1):
    """(wall s, CPU s, the ISA text or None for `opt`) of `stage` ("opt" or "isa") done `times` times `way`
    ("inprocess" or "tools")."""
    import llvmlite.binding as llvm
    from mlirgpu.llvm import ops

    wall = cpu = 0.0
    isa = None
    for _ in range(times):
        with llvm_arena.Arena():
            module = _module(ir, triple, chip)
            start, start_cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
            if way == "inprocess":
                if stage == "opt":
                    ops.optimize(module, 3)
                else:  # SPIR-V: isolated code generation, as the XeVM target asks
                    isa = ops.emit_assembly(module, triple.startswith("spirv"))
            else:
                tool = toolchain.llvm_tool("opt" if stage == "opt" else "llc")
                out = _tool([tool, *_flags(stage, chip), "-", "-o", "-"], module.module.as_bitcode())
                if stage == "opt":
                    llvm.parse_bitcode(out, context=module.context).close()
                else:
                    isa = out.decode("utf-8")
            wall += time.perf_counter() - start
            cpu += time.process_time() - start_cpu + _children_cpu() - children
    return wall, cpu, isa


def measure(reps, scales, batch, out):
    import llvmlite.binding as llvm  # noqa: F401 - LLVM initialised before any timing

    from mlirgpu.llvm import ops  # noqa: F401

    cases = []
    for stem, chip, scaled in _CASES:
        for scale in (scales if scaled else [1]):
            linked, optimized = dumps(write_source(out, stem, chip, scale))
            triple = _TRIPLE.search(linked).group(1)
            cases.append((f"{stem} x{scale}" if scaled else stem, linked, optimized, triple, chip, 1))
    small = cases[0]
    cases.append((f"{small[0]}, {batch} in a row", small[1], small[2], small[3], small[4], batch))
    rows = []
    for name, linked, optimized, triple, chip, times in cases:
        with llvm_arena.Arena():
            sizes = [len(_module(ir, triple, chip).module.as_bitcode()) for ir in (linked, optimized)]
        row = {"module": name, "bitcode": sizes}
        for stage, ir in (("opt", linked), ("isa", optimized)):
            samples = {"inprocess": [], "tools": []}
            for rep in range(reps):
                for way in (("inprocess", "tools") if rep % 2 == 0 else ("tools", "inprocess")):
                    wall, cpu, isa = run_stage(stage, way, ir, triple, chip, times)
                    samples[way].append((wall, cpu, isa))
            if stage == "isa":
                row["isa_identical"] = samples["inprocess"][0][2] == samples["tools"][0][2]
            for way, got in samples.items():
                row[f"{stage}_{way}"] = (statistics.median(w for w, _c, _i in got),
                                         statistics.median(c for _w, c, _i in got))
        rows.append(row)
    return rows


def report(rows):
    print("| module (bitcode bytes: linked, optimized) | O3 in process | O3 `opt` | ratio | codegen in process "
          "| codegen `llc` | ratio | llc ISA identical |")
    print("|---|---|---|---|---|---|---|---|")
    cell = lambda pair: f"{pair[0] * 1000:.0f} ms (CPU {pair[1] * 1000:.0f})"  # noqa: E731
    for row in rows:
        print(f"| {row['module']} ({row['bitcode'][0]}, {row['bitcode'][1]}) | {cell(row['opt_inprocess'])} | "
              f"{cell(row['opt_tools'])} | "
              f"{row['opt_tools'][0] / row['opt_inprocess'][0]:.2f} | {cell(row['isa_inprocess'])} | "
              f"{cell(row['isa_tools'])} | {row['isa_tools'][0] / row['isa_inprocess'][0]:.2f} | "
              f"{'yes' if row['isa_identical'] else 'NO'} |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--scales", default="1,8,32")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="mlirgpu-backends-")
    os.makedirs(out, exist_ok=True)
    try:
        report(measure(args.reps, [int(s) for s in args.scales.split(",")], args.batch, out))
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
