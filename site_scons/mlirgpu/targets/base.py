"""The target interface: a target is its name, its MLIR attribute and the defaults that attribute takes, and
one object per role it plays (mlirgpu.targets.roles): `checks` (the attribute), `lowering` (target-neutral
code), `codegen` (upstream's ModuleToObject hooks, by their names, and the stage list), `outputs` (formats,
dumps, the `#gpu.object`, containers) and `toolchain` (toolkit, tools, device libraries).

In the spirit of upstream's `ModuleToObject` and of Triton's per-backend stages, every difference between GPU
targets is a hook of one role, implemented once per target; each consumer calls the role it needs
(`job.target.codegen.module_to_object(...)`), and tests/unit/test_target_roles.py checks which module uses which.
"""
from dataclasses import dataclass, field

from . import roles


class Target:
    """A GPU target. Subclasses set the identity below and name their role classes (a subclass of each role's
    default, or the default itself); an instance makes one object of each, given the target."""

    name = None  # the --target / GPU_TARGET value
    attribute = None  # the MLIR attribute name, e.g. 'nvvm.target'
    default_triple = None
    default_chip = None
    default_opt_level = 2

    Checks = roles.Checks
    Lowering = roles.Lowering
    Codegen = roles.Codegen
    Outputs = roles.Outputs
    Toolchain = roles.Toolchain

    def __init__(self):
        self.checks = self.Checks(self)
        self.lowering = self.Lowering(self)
        self.codegen = self.Codegen(self)
        self.outputs = self.Outputs(self)
        self.toolchain = self.Toolchain(self)


@dataclass(frozen=True)
class TargetAttr:
    """One target attribute of a gpu.module (`#<dialect>.target<...>`), with its target's defaults applied."""

    target: object  # the Target implementation
    text: str
    params: dict = field(default_factory=dict)

    @property
    def chip(self):
        return self.params.get("chip", self.target.default_chip)

    @property
    def triple(self):
        return self.params.get("triple", self.target.default_triple)

    @property
    def features(self):
        return self.params.get("features", "")

    @property
    def opt_level(self):
        return int(self.params.get("O", self.target.default_opt_level))

    @property
    def link(self):
        return tuple(self.params.get(self.target.checks.link_parameter, ()))

    @property
    def flags(self):
        return self.params.get("flags", {}) or {}

    @property
    def abi(self):
        return self.params.get("abi", "600")
