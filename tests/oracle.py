"""Upstream MLIR 22 as the oracle: run `mlir-opt --gpu-module-to-binary` and read back its objects.

The objects are decoded from the printed `gpu.binary` ops by the tests themselves (not by the code under test),
so a comparison with our dumps checks the compiler core against upstream, not against itself.
"""
import os
import re
import subprocess

from mlirgpu.llvm import toolchain

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


def _lowered(path, pipeline):
    """The file to serialize: `path`, or with `pipeline`, a copy lowered by that pass pipeline."""
    if not pipeline:
        return path
    lowered = run_mlir_opt([path, f"--pass-pipeline={pipeline}"])
    with open(path + ".lowered.mlir", "w", encoding="utf-8") as handle:
        handle.write(lowered)
    return path + ".lowered.mlir"


def upstream_objects(path, fmt, toolkit, pipeline=None, opts="", libs=()):
    """[(target attribute text, object bytes)] in module order, as upstream serializes them.

    fmt: isa | bin | fatbin | llvm. With `pipeline`, the file is first lowered with that pass pipeline. `opts`
    and `libs` are the pass's `opts` and `l` options.
    """
    source = _lowered(path, pipeline)
    options = f"format={fmt} toolkit={toolkit}"
    if opts:  # a value in double quotes keeps them (upstream strips one pair itself); else single quotes
        options += f" opts={opts}" if opts.startswith('"') else f" opts='{opts}'"
    if libs:
        options += " l=" + ",".join(libs)
    printed = run_mlir_opt([source, f"--gpu-module-to-binary={options}"])
    return [(target, decode(body)) for target, _kind, body in _OBJECT.findall(printed)]


def upstream_objects_each_alone(path, fmt, toolkit, pipeline=None, opts="", libs=()):
    """`upstream_objects`, with each gpu.module of a (lowered) file of several serialized first in a process of
    its own. LLVM 22's SPIR-V back end keeps label ids from one module's functions to the next in one process
    (llvm/llvm-project#160613, keyed by where the allocator put them), so upstream's code for a later XeVM module
    of a file depends on its predecessors' allocations; a module serialized first has none, and gives the
    module's own code, which ours is (tests/identity/test_xevm.py). Moving a module first changes no symbol: host code
    that launches the others still finds them."""
    source = _lowered(path, pipeline)
    with open(source, encoding="utf-8") as handle:
        text = handle.read()
    spans = gpu_module_spans(text)
    if len(spans) < 2:
        return upstream_objects(source, fmt, toolkit, opts=opts, libs=libs)
    modules = [text[start:end] for start, end in spans]
    objects = []
    for index, module in enumerate(modules):
        order = [module] + modules[:index] + modules[index + 1 :]
        pieces, position = [], 0
        for (start, end), placed in zip(spans, order):
            pieces += [text[position:start], placed]
            position = end
        first = f"{path}.first{index}.mlir"
        with open(first, "w", encoding="utf-8") as handle:
            handle.write("".join(pieces) + text[position:])
        header = module[: module.index("\n")]
        targets = len(re.findall(r"#\w+\.target\b", header[header.find("[") : header.rfind("]") + 1]))
        objects += upstream_objects(first, fmt, toolkit, opts=opts, libs=libs)[:targets]
    return objects


def gpu_module_spans(text):
    """(start, end) of each gpu.module of an MLIR file, from its header to the brace closing its body (the last
    brace opened on the header line; the corpus holds no braces inside strings)."""
    spans = []
    for match in re.finditer(r"^[ \t]*gpu\.module @", text, re.M):
        line_end = text.index("\n", match.start())
        position = text.rindex("{", match.start(), line_end)
        depth = 0
        while True:
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            if depth == 0:
                break
            position += 1
        spans.append((match.start(), position + 1))
    return spans


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
