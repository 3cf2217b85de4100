"""Upstream MLIR 22 as the oracle: run `mlir-opt --gpu-module-to-binary` and read back its objects.

The objects are decoded from the printed `gpu.binary` ops by the tests themselves (not by the code under test),
so a comparison with our dumps checks the compiler core against upstream, not against itself.
"""
import os
import re
import subprocess

from mlirgpu import toolchain

_OBJECT = re.compile(
    r'#gpu\.object<(#\w+\.target(?:<[^>]*>)?)(?:, properties = \{[^}]*\})?, (?:(\w+) = )?'
    r'"((?:[^"\\]|\\[0-9A-Fa-f]{2}|\\[\\"nt])*)"'
)
_ESCAPES = {"\\": 0x5C, '"': 0x22, "n": 0x0A, "t": 0x09}


def decode(body):
    out = bytearray()
    i = 0
    while i < len(body):
        if body[i] != "\\":
            out += body[i].encode("utf-8")
            i += 1
        elif body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
    return bytes(out)


def run_mlir_opt(args, cwd=None):
    result = subprocess.run([toolchain.llvm_tool("mlir-opt"), *args], capture_output=True, text=True, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


def upstream_objects(path, fmt, toolkit, pipeline=None, opts="", libs=()):
    """[(target attribute text, object bytes)] in module order, as upstream serializes them.

    fmt: isa | bin | fatbin | llvm. With `pipeline`, the file is first lowered with that pass pipeline. `opts`
    and `libs` are the pass's `opts` and `l` options.
    """
    source = path
    if pipeline:
        lowered = run_mlir_opt([path, f"--pass-pipeline={pipeline}"])
        source = path + ".lowered.mlir"
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(lowered)
    options = f"format={fmt} toolkit={toolkit}"
    if opts:  # a value in double quotes keeps them (upstream strips one pair itself); else single quotes
        options += f" opts={opts}" if opts.startswith('"') else f" opts='{opts}'"
    if libs:
        options += " l=" + ",".join(libs)
    printed = run_mlir_opt([source, f"--gpu-module-to-binary={options}"])
    return [(target, decode(body)) for target, _kind, body in _OBJECT.findall(printed)]


def disassemble(bitcode, workdir, name):
    """Text of a bitcode blob, by llvm-dis (for comparing `format=llvm` with our opt.ll)."""
    path = os.path.join(workdir, name + ".bc")
    with open(path, "wb") as handle:
        handle.write(bitcode)
    return subprocess.run([toolchain.llvm_tool("llvm-dis"), path, "-o", "-"], capture_output=True, text=True,
                          check=True).stdout


def normalised_ir(ll_path, workdir):
    """Our .ll through llvm-as | llvm-dis, so both sides are printed from bitcode by the same tool."""
    bc = os.path.join(workdir, os.path.basename(ll_path) + ".bc")
    subprocess.run([toolchain.llvm_tool("llvm-as"), ll_path, "-o", bc], check=True)
    return subprocess.run([toolchain.llvm_tool("llvm-dis"), bc, "-o", "-"], capture_output=True, text=True,
                          check=True).stdout


def strip_module_id(text):
    return "\n".join(line for line in text.splitlines() if not line.startswith("; ModuleID"))
