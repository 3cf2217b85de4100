"""Byte-identity with upstream: our dumps against `mlir-opt --gpu-module-to-binary` on the corpus.

For every corpus file, chip (sm_80, sm_90, gfx90a, gfx942, pvc, bmg) and O level (0, 3): the ISA, cubin, fatbin,
HSACO and SPIR-V we dump equal upstream's `format=isa|bin|fatbin` objects byte for byte, and our `opt.ll` equals
upstream's `format=llvm` bitcode (both printed by llvm-dis). Upstream's XeVM assembly object is the text with a
NUL; every SPIR-V binary passes `spirv-val`, and what we embed for XeVM's format isa is upstream's object plus the
NUL its host glue adds. XeVM modules are compared with upstream's code for each module serialized first: LLVM 22's
SPIR-V back end lets a module's label ids depend on the modules before it in one process (see
oracle.upstream_objects_each_alone), and ours compiles each as if alone.

A corpus file may narrow or widen its cases with comment lines at its top:
  // identity-chips: gfx942            only these chips (files without @CHIP@ run once per O level)
  // identity-targets: nvvm rocdl      a target-neutral file is lowered for these targets only
  // identity-variant: NAME opts=TEXT  also compile with gpu-module-to-binary's `opts` (our --opts)
  // identity-variant: NAME l=FILE     also link FILE (upstream's `l`, our -l); @DATA@ as in the module
`@DATA@` is the folder of bitcode built from tests/corpus/data/*.ll.
"""
import dataclasses
import glob
import os
import re
import subprocess

import pytest

import oracle
from corpusutil import CORPUS, corpus_data, instantiate, neutral_targets
from mlirgpu import CompileOptions, compile_file

CHIPS = {"nvvm": ("sm_80", "sm_90"), "rocdl": ("gfx90a", "gfx942"), "xevm": ("pvc", "bmg")}
FORMATS = {"nvvm": ("isa", "bin", "fatbin"), "rocdl": ("isa", "bin"), "xevm": ("isa", "bin", "fatbin")}
OURS_FORMAT = {"nvvm": "fatbin", "rocdl": "bin", "xevm": "bin"}
SUFFIX = {"nvvm": {"isa": "isa", "bin": "cubin", "fatbin": "fatbin"}, "rocdl": {"isa": "isa", "bin": "hsaco"},
          "xevm": {"isa": "isa", "bin": "spv", "fatbin": "spv"}}
ISA_OBJECT_TAIL = {"xevm": b"\0"}  # upstream's XeVM serializer keeps the assembly's NUL in the object
LEVELS = (0, 3)
BACKENDS = ("inprocess", "tools")  # MLIRGPU_LLVM_BACKEND: llvmlite in process, the release llc


def _directives(path):
    chips, variants = None, [("default", "", ())]
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("//"):
                break
            match = re.match(r"// identity-chips: (.*)$", line)
            if match:
                chips = tuple(match.group(1).split())
            match = re.match(r"// identity-variant: (\S+) (opts|l)=(.*)$", line)
            if match:
                name, kind, value = match.groups()
                variants.append((name, value, ()) if kind == "opts" else (name, "", (value,)))
    return chips, variants


def _cases():
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.mlir"))):
        name = os.path.basename(path)
        family = name.split(".")[-2]
        with open(path, encoding="utf-8") as handle:
            fixed = "@CHIP@" not in handle.read()
        chips, variants = _directives(path)
        targets = neutral_targets(path, tuple(CHIPS))
        for level in LEVELS:
            for variant, opts, libs in variants:
                label = "" if variant == "default" else f"-{variant}"
                if family == "neutral":
                    for target in targets:
                        for chip in chips or CHIPS[target]:
                            yield pytest.param(path, target, chip, level, opts, libs,
                                               id=f"{name}-{chip}-O{level}{label}")
                elif fixed:
                    yield pytest.param(path, family, "", level, opts, libs, id=f"{name}-O{level}{label}")
                else:
                    for chip in chips or CHIPS[family]:
                        yield pytest.param(path, family, chip, level, opts, libs, id=f"{name}-{chip}-O{level}{label}")


def _pipeline(target, chip, level):
    attach = f"{target}-attach-target{{chip={chip} O={level}}}"
    if target == "xevm":  # the SPIR-V conversion before scf-to-cf, convert-to-llvm inside the gpu.module
        return (f"builtin.module(gpu-kernel-outlining, {attach}, lower-affine, gpu.module(convert-gpu-to-llvm-spv"
                "{use-64bit-index=true}, convert-xevm-to-llvm, convert-scf-to-cf, convert-to-llvm, canonicalize, cse, "
                "reconcile-unrealized-casts), convert-scf-to-cf)")
    convert = "convert-gpu-to-nvvm" if target == "nvvm" else f"convert-gpu-to-rocdl{{chipset={chip} runtime=HIP}}"
    return (f"builtin.module(gpu-kernel-outlining, {attach}, lower-affine, convert-scf-to-cf, "
            f"gpu.module({convert}, canonicalize, cse, reconcile-unrealized-casts))")


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("path,target,chip,level,opts,libs", list(_cases()))
def test_matches_upstream(path, target, chip, level, opts, libs, tmp_path, cuda_root, rocm_root):
    assert_matches_upstream(path, target, chip, level, opts, libs, tmp_path,
                            {"nvvm": cuda_root, "rocdl": rocm_root}.get(target, ""))


def assert_matches_upstream(path, target, chip, level, opts, libs, tmp_path, toolkit, ours=None):
    """One case of the harness: upstream's `target` against our compile, by `ours` where given (a registered
    target reusing `target`'s code generation, as tests/marked_target.py does) for a target-neutral file."""
    source = instantiate(path, tmp_path / os.path.basename(path), chip, level)
    libs = tuple(lib.replace("@DATA@", corpus_data()) for lib in libs)
    neutral = path.endswith(".neutral.mlir")
    ours_format = OURS_FORMAT[target]
    options = CompileOptions(format=ours_format, toolkit=toolkit, target=(ours or target) if neutral else "",
                             chip=chip if neutral else "", opt_level=level if neutral else None, opts=opts,
                             link_libs=libs)
    pipeline = _pipeline(target, chip, level) if neutral else None
    # Code generation: XeVM's modules against upstream's for each module serialized first (see oracle).
    generated = oracle.upstream_objects_each_alone if target == "xevm" else oracle.upstream_objects
    upstream_code = {fmt: generated(source, fmt, toolkit, pipeline, opts=opts, libs=libs) for fmt in FORMATS[target]}
    upstream_ir = oracle.upstream_objects(source, "llvm", toolkit, pipeline, opts=opts, libs=libs)
    suffix = SUFFIX[target]
    for backend in BACKENDS:  # each LLVM build forced for the ISA stage (mlirgpu.llvm.backend)
        dumps = tmp_path / f"dumps-{backend}"
        result = compile_file(source, dataclasses.replace(options, dump_dir=str(dumps)),
                              dict(os.environ, MLIRGPU_LLVM_BACKEND=backend))
        stems = [job.stem for job in result.jobs]
        for fmt, upstream in upstream_code.items():
            assert len(upstream) == len(stems), f"{fmt}: upstream made {len(upstream)} objects, we {len(stems)}"
            for stem, (attr, blob) in zip(stems, upstream):
                ours = _read(dumps / f"{stem}.{suffix[fmt]}") + (ISA_OBJECT_TAIL.get(target, b"") if fmt == "isa"
                                                                 else b"")
                assert ours == blob, f"{backend}: {stem}.{suffix[fmt]} differs from upstream format={fmt} for {attr}"
        for stem, (attr, bitcode) in zip(stems, upstream_ir):
            theirs = oracle.strip_module_id(oracle.disassemble(bitcode, tmp_path, stem))
            ours = oracle.strip_module_id(oracle.normalised_ir(str(dumps / f"{stem}.opt.ll"), tmp_path))
            assert ours == theirs, f"{backend}: {stem}.opt.ll differs from upstream format=llvm for {attr}"

    if target == "xevm":
        for stem in stems:
            checked = subprocess.run(["spirv-val", str(dumps / f"{stem}.spv")], capture_output=True, text=True)
            assert checked.returncode == 0, f"{stem}.spv: spirv-val: {checked.stdout}{checked.stderr}"
        embedded = compile_file(source, CompileOptions(format="isa", target=options.target, chip=options.chip,
                                                       opt_level=options.opt_level, opts=opts, link_libs=libs))
        upstream = generated(source, "isa", toolkit, pipeline, opts=opts, libs=libs)
        assert [item.data for item in embedded.binaries] == [blob + b"\0" for _attr, blob in upstream]
