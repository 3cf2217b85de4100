"""The benchmark corpus: copies of the test corpus's modules (renamed so every module is unique), with an
SConstruct for our build and a Makefile for the upstream chain producing equivalent objects."""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEMPLATES = os.path.join(ROOT, "tests", "corpus")

# (template, size class, format) per family; repeated in order until the corpus has the requested size.
MIX = {
    "nvvm": [("saxpy", "small", "fatbin"), ("math_libdevice", "medium", "fatbin"), ("multi_kernel", "medium", "bin"),
             ("saxpy", "small", "bin"), ("reduce_sum", "medium", "fatbin"), ("shared_transpose", "medium", "bin"),
             ("many_kernels", "large", "fatbin")],
    "rocdl": [("saxpy", "small", "bin"), ("math_ocml", "medium", "bin"), ("multi_kernel", "medium", "bin"),
              ("saxpy", "small", "bin"), ("reduce_sum", "medium", "bin"), ("shared_transpose", "medium", "bin"),
              ("many_kernels", "large", "bin")],
}
CHIPS = {"nvvm": ("sm_80", "sm_90"), "rocdl": ("gfx90a", "gfx942")}


def _instance(template, family, chip, index):
    with open(os.path.join(TEMPLATES, f"{template}.{family}.mlir"), encoding="utf-8") as handle:
        text = handle.read().replace("@CHIP@", chip).replace("@O@", "3")
    for name in re.findall(r"gpu\.module @(\w+)", text):
        text = re.sub(rf"@{name}\b", f"@{name}_{index}", text)
    return text


def _rocm_root(folder):
    """A ROCm-shaped root for upstream mlir-opt (<root>/amdgcn, <root>/llvm/bin/ld.lld)."""
    import sys

    sys.path.insert(0, os.path.join(ROOT, "site_scons"))
    from mlirgpu.llvm import toolchain
    from mlirgpu.targets.rocm import rocm_toolkit

    root = os.path.join(folder, "rocm")
    os.makedirs(os.path.join(root, "llvm", "bin"), exist_ok=True)
    for link, target in ((os.path.join(root, "amdgcn"), os.path.join(rocm_toolkit(), "amdgcn")),
                         (os.path.join(root, "llvm", "bin", "ld.lld"), toolchain.llvm_tool("ld.lld"))):
        if not os.path.lexists(link):
            os.symlink(target, link)
    return root, toolchain


def write_corpus(folder, count, null_build=False):
    """Write `count` sources plus SConstruct, upstream.mk and latency.json; returns `count`."""
    os.makedirs(folder, exist_ok=True)
    from mlirgpu.targets.cuda import cuda_toolkit

    rocm, toolchain = _rocm_root(folder)
    cuda = cuda_toolkit()
    entries = []
    for index in range(count):
        if null_build:
            family, (template, size, fmt) = "nvvm", ("saxpy", "small", "isa")
        else:
            family = ("nvvm", "rocdl")[index % 2]
            template, size, fmt = MIX[family][(index // 2) % len(MIX[family])]
        chip = CHIPS[family][(index // 2) % 2]
        name = f"s{index:04d}_{template}_{family}"
        with open(os.path.join(folder, name + ".mlir"), "w", encoding="utf-8") as handle:
            handle.write(_instance(template, family, chip, index))
        entries.append((name, family, size, fmt, cuda if family == "nvvm" else rocm))
    sconstruct = ["DefaultEnvironment(tools=[])", "env = Environment(tools=['mlirgpu'], toolpath=[%r])" % os.path.join(
        ROOT, "site_scons", "site_tools")]
    make = ["MLIR_OPT := " + toolchain.llvm_tool("mlir-opt"), "MLIR_TRANSLATE := " + toolchain.llvm_tool("mlir-translate"),
            "LLC := " + toolchain.llvm_tool("llc"), "OBJECTS := " + " ".join(f"out/{e[0]}.o" for e in entries),
            "all: $(OBJECTS)", "out:", "\tmkdir -p out"]
    for name, family, size, fmt, toolkit in entries:
        sconstruct.append(f"env.GpuObject('out/{name}', '{name}.mlir', GPU_FORMAT='{fmt}', GPU_TOOLKIT='{toolkit}')")
        make += [f"out/{name}.o: {name}.mlir | out",
                 f"\t$(MLIR_OPT) $< '--gpu-module-to-binary=format={fmt} toolkit={toolkit}' -o out/{name}.bin.mlir",
                 f"\t$(MLIR_TRANSLATE) --mlir-to-llvmir out/{name}.bin.mlir -o out/{name}.ll",
                 f"\t$(LLC) -filetype=obj out/{name}.ll -o $@"]
    with open(os.path.join(folder, "SConstruct"), "w") as handle:
        handle.write("\n".join(sconstruct) + "\n")
    with open(os.path.join(folder, "upstream.mk"), "w") as handle:
        handle.write("\n".join(make) + "\n")
    latency = {}
    for label, wanted in (("small", "saxpy"), ("medium", "math_libdevice"), ("large", "many_kernels")):
        match = next((e for e in entries if wanted in e[0] and e[1] == "nvvm"), None)
        if match:
            latency[label] = (match[0] + ".mlir", match[3], match[4])
    with open(os.path.join(folder, "latency.json"), "w") as handle:
        json.dump(latency, handle)
    return count
