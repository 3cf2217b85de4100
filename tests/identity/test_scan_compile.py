"""The emitter's fast scan predicts exactly the dump files the compile writes."""
import glob
import os

import pytest

from corpusutil import CORPUS, instantiate, neutral_targets
from mlirgpu import CompileOptions, compile_file
from mlirgpu.pipeline.scan import planned_outputs

CHIP = {"nvvm": "sm_90", "rocdl": "gfx942", "xevm": "pvc"}
SECOND_CHIP = {"nvvm": "sm_80", "rocdl": "gfx90a", "xevm": "bmg"}


def _cases():
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.mlir"))):
        family = os.path.basename(path).split(".")[-2]
        for target in neutral_targets(path) if family == "neutral" else (family,):
            for fmt in ("isa", "fatbin"):
                yield pytest.param(path, target, fmt, id=f"{os.path.basename(path)}-{target}-{fmt}")


@pytest.mark.parametrize("path,target,fmt", list(_cases()))
def test_scan_equals_compile(path, target, fmt, tmp_path, cuda_root, rocm_root):
    source = instantiate(path, tmp_path / os.path.basename(path), CHIP[target], 1)
    neutral = path.endswith(".neutral.mlir")
    options = CompileOptions(format=fmt, toolkit={"nvvm": cuda_root, "rocdl": rocm_root}.get(target, ""),
                             dump_dir=str(tmp_path / "D"), target=target if neutral else "",
                             chip=f"{CHIP[target]},{SECOND_CHIP[target]}" if neutral else "")
    result = compile_file(source, options)
    written = [os.path.relpath(p, tmp_path / "D") for p in result.dumps]
    assert sorted(planned_outputs(source, options)) == sorted(written)
