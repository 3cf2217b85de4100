"""What the fast scan (mlirgpu.pipeline.scan) finds in a source, and the form the scan cache stores it in
(mlirgpu.pipeline.scancache): kept apart from the scanner, which is long enough on its own."""
import dataclasses

from ..targets import target_for_attribute
from ..targets.base import TargetAttr


@dataclasses.dataclass(frozen=True)
class ScannedModule:
    name: str
    targets: tuple
    start: int = -1  # offset of `gpu.module` in the file (-1 for modules kernel outlining will create)
    end: int = -1  # offset just after its closing brace
    handler: str = ""
    symbols: frozenset = frozenset()  # symbols its body names (what device libraries it may need)
    ops: frozenset = frozenset()  # operations its body uses (for code that is lowered first)


@dataclasses.dataclass(frozen=True)
class Scan:
    modules: tuple
    lowering: bool  # some module needs the build's target (it has none, or kernels are outlined)
    host: bool  # host code launches kernels
    direct: bool  # an explicit top module holding only targeted gpu.modules: pieces can be cut from the text
    prelude_end: int = 0  # offset of the line where the top module starts (aliases and comments before it)
    suffix_start: int = -1  # offset after the top module (location aliases and the resource trailer), or -1
    prelude_start: int = 0  # offset of the line of the first alias or the top module (before: only comments)


def to_json(scan):
    """A Scan in the scan cache's stored (JSON) form."""
    return {"modules": [{"name": m.name, "start": m.start, "end": m.end, "handler": m.handler,
                         "symbols": sorted(m.symbols), "ops": sorted(m.ops),
                         "targets": [[t.target.attribute, t.text, t.params] for t in m.targets]}
                        for m in scan.modules],
            "lowering": scan.lowering, "host": scan.host, "direct": scan.direct,
            "prelude_end": scan.prelude_end, "suffix_start": scan.suffix_start, "prelude_start": scan.prelude_start}


def from_json(entry):
    """The Scan of a stored entry (KeyError, TypeError or ValueError for one of another shape)."""
    modules = tuple(ScannedModule(str(m["name"]), tuple(_stored_target(*t) for t in m["targets"]), int(m["start"]),
                                  int(m["end"]), str(m["handler"]), frozenset(map(str, m["symbols"])),
                                  frozenset(map(str, m["ops"]))) for m in entry["modules"])
    return Scan(modules, bool(entry["lowering"]), bool(entry["host"]), bool(entry["direct"]),
                int(entry["prelude_end"]), int(entry["suffix_start"]), int(entry["prelude_start"]))


def _stored_target(attribute, text, params):
    target = target_for_attribute(attribute)
    if target is None or not isinstance(text, str) or not isinstance(params, dict):
        raise ValueError("not a scan entry")
    return TargetAttr(target, text, params)
