"""A fourth target for tests/build/test_target_plugins.py, defined outside the package: a variant of NVVM with its own
name, default chip and binary suffix, registered through MLIRGPU_TARGETS=toy_target."""
from dataclasses import replace

from mlirgpu.targets import register
from mlirgpu.targets.nvvm import NVVM


class Toy(NVVM):
    """NVVM's code for sm_80 by default, its cubin dumped and embedded as `<module>.toy`."""

    name = "toy"

    def default_build_chip(self, options, environment=None):
        return "sm_80"

    def binary_suffixes(self, fmt):
        return ("toy",)

    def embedded_format(self, fmt):
        return "bin"

    def fat_container(self, count, options):
        return None

    def serialize(self, job, assembly, options, scratch):
        made = super().serialize(job, assembly, replace(options, format="bin"), scratch)
        return {"toy": made["cubin"], "log": made["log"]}


register(Toy())
