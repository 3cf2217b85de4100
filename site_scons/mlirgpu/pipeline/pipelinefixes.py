"""The fixes for a `--lowering` mlir-opt cannot read, in the terms of the pipeline the user gave: an option a pass
does not have is named with its pass and the option that pass takes instead (`arch` is `cubin-chip` for
upstream's named pipeline, `chipset` for a gpu-to-<target> conversion), and an example pipeline is one for the
target the pipeline (or else the file) is written for (lowering.example_lowering), not always the same vendor's."""
import difflib
import re

from ..compile_options import hint
from ..errors import CompileError
from ..targets import TARGETS
from . import passtext

# What users coming from other compilers call a chip (clang's --offload-arch, llc's -mcpu, nvcc's -arch).
_CHIP_WORDS = ("arch", "offload-arch", "gpu-arch", "mcpu", "cpu", "sm", "gpu", "chip", "chipset", "target")


def no_such_option(given, key):
    """The CompileError for mlir-opt's `no such option KEY`, naming the first pass of `given` ((name, options)
    pairs, in order) given KEY that it does not register, and what that pass takes; None when none was."""
    registered = passtext.registered()
    found = next(((name, values) for name, values in given if key in values and key not in registered.get(name, ())),
                 None)
    if found is None:
        return None
    name, values = found
    options = registered.get(name, ())
    instead = difflib.get_close_matches(key, options, n=1)
    if not instead and key in _CHIP_WORDS:
        instead = [option for option in options if "chip" in option][:1]
    takes = f"{name} takes {', '.join(options)}" if options else f"{name} takes no options"
    fix = takes
    if instead:
        shown = " ".join(f"{instead[0] if option == key else option}={value}" if value else option
                         for option, value in values.items())
        chip = f", or leave the chip out and set {hint('chip', values[key])}" if "chip" in instead[0] and \
            values[key] else ""
        fix = f"write {instead[0]}, as in {name}{{{shown}}}{chip} ({takes})"
    return CompileError(f"mlir-opt cannot read the lowering pipeline: {name} has no option '{key}'", fix=fix)


def example_fix(text, source=None):
    """The fix for a pipeline mlir-opt cannot read: an example for the target `text` names in its passes
    (`rocdl-attach-target`, `convert-gpu-to-rocdl`), or else the one `source`'s target attributes name."""
    target = _target_named(text) or _target_of_file(source)
    if target is None:
        return ("give passes and pipelines mlir-opt 22 registers (`mlir-opt --help` lists them), as a pass pipeline "
                f"({hint('lowering', 'name{options}, ...')}) or a RUN line's flags (-name=\"options\")")
    return (f"give a pass pipeline mlir-opt 22 registers, e.g. for {target.name} "
            f"{hint('lowering', target.lowering.example_lowering())}, or "
            "a RUN line's flags (-name=\"options\")")


def _target_named(text):
    for target in TARGETS.values():
        if re.search(rf"(?<![\w.])(?:[\w\-]*-)?{re.escape(target.name)}(?:-[\w\-]*)?(?![\w.])", text):
            return target
    return None


def _target_of_file(source):
    try:
        with open(source, encoding="utf-8", errors="replace") as handle:
            text = handle.read(1 << 20)
    except (OSError, TypeError):
        return None
    return next((target for target in TARGETS.values() if "#" + target.attribute in text), None)
