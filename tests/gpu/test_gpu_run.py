"""Our embedded NVVM binaries run on a GPU and compute the right results.

The program `tests/gpu/run_kernels.c` is linked with host objects we build here (a cubin, fatbins in both
layouts, PTX text, and a target-neutral module that links libdevice); it finds every binary through the registry,
loads it with the CUDA driver and checks each kernel's output on the host. Where this machine has no CUDA driver
or GPU the program says so and the test skips (hardware this machine lacks); the build and link still run.

To check on a machine that has a GPU but not our toolchain: `python tests/gpu/test_gpu_run.py DIR` builds the program
into DIR here; copy DIR there and run `DIR/run_kernels`.
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(ROOT, "examples")

# (name, source, options): every way an NVVM binary can reach a program. The saxpy source asks for sm_80; the
# cubin is made for sm_90 (a cubin runs only on its own major version), while the sm_80 fatbin's PTX is JIT
# compiled by the driver for whatever GPU runs it.
VARIANTS = (
    ("saxpy_cubin", "saxpy_sm90", ["--format", "bin"]),
    ("saxpy_fatbin", "saxpy_sm80", ["--format", "fatbin"]),
    ("saxpy_vendor", "saxpy_sm90", ["--format", "fatbin", "--layout", "vendor"]),
    ("saxpy_ptx", "saxpy_sm90", ["--format", "isa"]),
    ("softplus_cubin", os.path.join(EXAMPLES, "neutral", "softplus.mlir"),
     ["--target", "nvvm", "--chip", "sm_90", "--format", "bin"]),
    ("softplus_fatbin", os.path.join(EXAMPLES, "neutral", "softplus.mlir"),
     ["--target", "nvvm", "--chip", "sm_80,sm_90", "--format", "fatbin"]),
)


def build(folder):
    """Compiles every variant with the `mlirgpu` command and links the runner; returns the program's path."""
    os.makedirs(folder, exist_ok=True)
    saxpy = open(os.path.join(EXAMPLES, "saxpy", "saxpy.nvvm.mlir")).read()
    assert 'chip = "sm_80"' in saxpy
    sources = {"saxpy_sm80": saxpy, "saxpy_sm90": saxpy.replace('chip = "sm_80"', 'chip = "sm_90"')}
    for name, text in sources.items():
        with open(os.path.join(folder, name + ".mlir"), "w") as handle:
            handle.write(text)
    objects, includes = [], []
    for name, source, options in VARIANTS:
        source = source if os.path.isabs(source) else os.path.join(folder, source + ".mlir")
        obj, header = os.path.join(folder, name + ".o"), os.path.join(folder, name + ".h")
        subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", obj, "--header", header,
                        "--symbol-prefix", name + "_", "--dump-intermediates", os.path.join(folder, name),
                        *options], check=True, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "site_scons")})
        objects.append(obj)
        includes += ["-include", header]
    program = os.path.join(folder, "run_kernels")
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", *includes, os.path.join(HERE, "run_kernels.c"),
                    *objects, "-ldl", "-lm", "-o", program], check=True)
    return program


def test_embedded_nvvm_binaries_compute_the_right_results(tmp_path):
    program = build(str(tmp_path))
    run = subprocess.run([program], capture_output=True, text=True, timeout=300)
    assert f"{len(VARIANTS)} NVVM binaries embedded" in run.stdout, run.stdout + run.stderr
    if run.returncode == 77:
        pytest.skip(run.stdout.strip().splitlines()[-1])
    assert run.returncode == 0, run.stdout + run.stderr
    # Every binary ran each of its kernels: saxpy in four, mish and pow_sin_f64 in two.
    assert run.stdout.count("ok   ") == 4 + 2 * 2, run.stdout


if __name__ == "__main__":
    print(build(os.path.abspath(sys.argv[1])))
