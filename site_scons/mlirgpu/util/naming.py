"""Names derived from gpu.module symbols: dump file stems and C symbol names.

MLIR allows any string as a symbol (`@"../x y"`), so neither kind of name is taken verbatim: file stems keep
`[A-Za-z0-9_-]` and replace everything else with `_` (no separator, no `..`, never empty), C names keep
identifier characters. Long names are shortened with a hash so distinct names stay distinct.
"""
import hashlib
import re

_MAX = 120


def _shorten(name, original):
    if len(name) <= _MAX:
        return name
    digest = hashlib.sha256(original.encode("utf-8")).hexdigest()[:12]
    return f"{name[:_MAX - 13]}_{digest}"


def file_stem(symbol):
    """A file-name-safe stem for a module symbol."""
    stem = re.sub(r"[^A-Za-z0-9_\-]", "_", symbol) or "_"
    if stem.startswith("-"):
        stem = "_" + stem
    return _shorten(stem, symbol)


def c_name(symbol):
    """A C identifier for a module symbol."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", symbol) or "_"
    if name[0].isdigit():
        name = "_" + name
    return _shorten(name, symbol)


def job_names(symbol, targets):
    """For each target of a module: (dump stem, C symbol prefix).

    One target: `<module>` / `<module>`. Several: `<module>.<chip>` / `<module>_<chip>`, plus `.<n>` / `_<n>`
    (n = position in the target list) when two targets share a chip.
    """
    stem, cname = file_stem(symbol), c_name(symbol)
    if len(targets) == 1:
        return [(stem, cname)]
    chips = [t.chip for t in targets]
    names = []
    for index, chip in enumerate(chips):
        suffix = file_stem(chip)
        csuffix = c_name(chip)
        if chips.count(chip) > 1:
            suffix += f".{index}"
            csuffix += f"_{index}"
        names.append((f"{stem}.{suffix}", f"{cname}_{csuffix}"))
    return names
