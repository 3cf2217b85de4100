"""GPU targets: the few places where NVVM and ROCDL compilation differ.

Everything else (translation, linking, optimization, ISA emission, dumps, embedding) is the shared pipeline in
`mlirgpu.pipeline`. A target supplies: its attribute's defaults (triple, chip, O level), chip validation, the
pre-link step and library list, the ISA-to-binary serializer and the binary file suffixes per format.
"""
from .nvvm import NVVM
from .rocdl import ROCDL

TARGETS = {target.name: target for target in (NVVM(), ROCDL())}


def target_for_attribute(attr_name):
    """`nvvm.target` -> the NVVM target, `rocdl.target` -> ROCDL, else None."""
    for target in TARGETS.values():
        if target.attribute == attr_name:
            return target
    return None
