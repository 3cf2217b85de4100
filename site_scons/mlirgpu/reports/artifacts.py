"""CI artifacts: one manifest of everything the GPU compiles produced (reports.manifest), human reports
(reports.rendering), a baseline comparison with regression rules (reports.rules), and a reproducible archive
(reports.archive), written together from the per-object records (`mlirgpu.json`) that every compile with dumps
writes, so it works for SCons, the CLI or any other build system.
"""
import json
import os

from ..errors import CompileError
from ..pipeline.planning import RECORD_DUMP
from .archive import archive_members, write_archive
from .manifest import build_manifest
from .rendering import html_report, markdown_report
from .rules import compare, isa_diffs, parse_rules, violations


def find_records(paths):
    """The record files named by `paths` (relative to the current folder): a record itself, or every record below
    a folder: `mlirgpu.json` in a dump folder (SCons's `<object>.dumps/`, a library's `<library>.dumps/`),
    `<prefix>mlirgpu.json` in a flat one (--dump-prefix: Meson, CMake), at any depth (a whole build folder). A
    folder holding none, or one that cannot be read, is an error naming it."""
    records = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(os.path.join(folder, name) for folder, _dirs, names in os.walk(path, onerror=_unreadable)
                           for name in names if name == RECORD_DUMP or name.endswith("." + RECORD_DUMP))
            if not found:
                raise CompileError(f"no compile record ({RECORD_DUMP} or <prefix>{RECORD_DUMP}) in this folder or "
                                   "below it", file=path,
                                   fix="build with the dumps on (--dump-intermediates DIR, SCons DUMP=1, CMake "
                                       "-DMLIRGPU_DUMP=ON) and name that build or dump folder")
            records += found
        elif os.path.isfile(path):
            records.append(path)
        else:
            raise CompileError("no such record or dump folder", file=path, fix="name a dump folder or its record")
    return records


def _unreadable(exc):
    """A folder below a named one that cannot be listed is an error naming it, never a report without it."""
    raise CompileError(f"cannot read this folder: {exc.strerror}", file=exc.filename,
                       fix="make it readable, or name the dump folders to report") from None


OUTPUTS = ("gpu-manifest.json", "gpu-report.md", "gpu-report.html", "gpu-artifacts.tar.gz")


def write_artifacts(record_paths, out_dir, versions, toolkit="", baseline="", fail_on="", trace=""):
    """Write OUTPUTS into `out_dir`; returns the regression messages (the caller fails the build on any).
    `trace`: the build's trace file, which the HTML report links."""
    from ..util.fsutil import RECORD_INPUT, read_input, write_atomic

    rules = parse_rules(fail_on)
    manifest = build_manifest(record_paths, out_dir, versions, toolkit)
    changes, diffs = None, {}
    if baseline:
        try:
            baseline_manifest = json.loads(read_input(baseline, RECORD_INPUT).decode("utf-8"))
            changes = compare(manifest, baseline_manifest)
            diffs = isa_diffs(manifest, out_dir, baseline_manifest, baseline)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CompileError(f"cannot read the baseline manifest ({type(exc).__name__})", file=baseline,
                               fix="pass the gpu-manifest.json of an earlier build") from None
    elif any(rule[0] != "substituted" for rule in rules):
        raise CompileError("GPU_FAIL_ON needs a baseline", fix="set GPU_BASELINE to an earlier gpu-manifest.json")
    broken = violations(changes, rules, manifest)
    names = dict(zip(("manifest", "markdown", "html", "archive"), OUTPUTS))
    write_atomic(os.path.join(out_dir, names["manifest"]), json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    write_atomic(os.path.join(out_dir, names["markdown"]), markdown_report(manifest, changes, broken, diffs))
    link = os.path.relpath(trace, out_dir).replace(os.sep, "/") if trace else ""
    write_atomic(os.path.join(out_dir, names["html"]), html_report(manifest, changes, broken, link, diffs))
    write_atomic(os.path.join(out_dir, names["archive"]), write_archive(archive_members(manifest, out_dir, names)))
    return broken


def toolchain_versions(toolkit=""):
    """Identities of the tools that shape the outputs (versions and hashes, no paths)."""
    from ..compile_options import CompileOptions
    from ..pipeline.planning import tool_identities

    return tool_identities(CompileOptions(toolkit=toolkit))
