"""Names derived from gpu.module symbols: dump file stems and C symbol names.

MLIR allows any string as a symbol (`@"../x y"`), so neither kind of name is taken verbatim: file stems keep
`[A-Za-z0-9_-]` and replace everything else with `_` (no separator, no `..`, never empty), C names keep
identifier characters. Long names are shortened with a hash so distinct names stay distinct.
"""
import hashlib
import re

_MAX = 120
LIBRARY_SUFFIX = ".bc"


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


def library_file(prefix, target, chip=None):
    """A device-function library's file: `<prefix>.<target>.bc`, or `<prefix>.<target>.<chip>.bc` when the library
    is built for several chips of the target (`library_for` reads the name back)."""
    return f"{prefix}.{target}{'' if chip is None else '.' + file_stem(chip)}{LIBRARY_SUFFIX}"


def library_for(path, targets):
    """(target, chip or None) a bitcode file is for, by its name as `library_file` writes it (`targets`: the
    registered target names), or None for any other name (a file linked into every job, as before)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if not name.endswith(LIBRARY_SUFFIX):
        return None
    parts = name[: -len(LIBRARY_SUFFIX)].split(".")
    if len(parts) >= 2 and parts[-1] in targets:
        return parts[-1], None
    if len(parts) >= 3 and parts[-2] in targets:
        return parts[-2], parts[-1]
    return None
