"""A target that adds a stage of its own, defined outside the package (tests/identity/test_target_stages.py): NVVM's code
generation under the name `marked`, with a stage after `isa` that writes the ISA's marked copy as the dump
`<module>.marked.isa`. Registered through MLIRGPU_TARGETS=marked_target (or by importing this module).

Its code is NVVM's, so upstream's `gpu-module-to-binary` is its oracle: the added stage only writes a dump, and
the binary stage takes the ISA as `isa` made it."""
from mlirgpu.pipeline.stages import Stage, machine_context
from mlirgpu.targets import register
from mlirgpu.targets.nvvm import NVVM, NVVMCodegen

MARK = "// marked by tests/marked_target.py\n"


def _marked(compile_, job, assembly):
    """The ISA's text after MARK."""
    return MARK + assembly.text


def _marked_context(compile_, job):
    return machine_context(compile_, job) + [MARK]


MARKED = Stage("marked.isa", _marked, "(none: a target's own stage)", _marked_context, feeds_next=False)


class MarkedCodegen(NVVMCodegen):
    """NVVM's code generation, with MARKED after the `isa` stage (in every format and emit that runs `isa`)."""

    def stages(self, shared):
        suffixes = [stage.suffix for stage in shared]
        if "isa" not in suffixes:
            return shared
        after = suffixes.index("isa") + 1
        return [*shared[:after], MARKED, *shared[after:]]


class Marked(NVVM):
    name = "marked"
    Codegen = MarkedCodegen


register(Marked())
