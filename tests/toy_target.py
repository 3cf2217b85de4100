"""A fourth target for tests/build/test_target_plugins.py, defined outside the package: a variant of NVVM with its
own name, default chip and binary suffix, registered through MLIRGPU_TARGETS=toy_target. It changes two roles
(mlirgpu.targets.roles) and keeps NVVM's others."""
from dataclasses import replace

from mlirgpu.targets import register
from mlirgpu.targets.nvvm import NVVM, NVVMCodegen, NVVMLowering, NVVMOutputs


class ToyLowering(NVVMLowering):
    def default_build_chip(self, options, environment=None):
        return "sm_80"


class ToyCodegen(NVVMCodegen):
    def module_to_object(self, job, assembly, options, scratch):
        made = super().module_to_object(job, assembly, replace(options, format="bin"), scratch)
        return {"toy": made["cubin"], "log": made["log"]}


class ToyOutputs(NVVMOutputs):
    """NVVM's cubin, dumped and embedded as `<module>.toy`."""

    def binary_suffixes(self, fmt):
        return ("toy",)

    def embedded_format(self, fmt):
        return "bin"

    def fat_container(self, count, options):
        return None


class Toy(NVVM):
    """NVVM's code for sm_80 by default, its cubin dumped and embedded as `<module>.toy`."""

    name = "toy"
    Lowering, Codegen, Outputs = ToyLowering, ToyCodegen, ToyOutputs


register(Toy())
