"""CI artifacts: one manifest of everything the GPU compiles produced, human reports, a baseline comparison
with regression rules, and a reproducible archive. Built from the per-object records (`mlirgpu.json`) that every
compile with dumps writes, so it works for SCons, the CLI or any other build system.

Manifest schema `scons-mlir-gpu/manifest`, version 1 (all paths relative to the manifest's folder):

    {"schema": ..., "version": 1, "toolchain": {name: version},
     "objects": [{"source", "record", "options": {...}, "warnings": [...],
                  "binaries": [{"symbol", "module", "target", "chips", "format", "section", "size", "sha256"}],
                  "jobs": [{"module", "target", "chip", "opt_level", "features",
                            "intermediates": {suffix: {"path", "sha256"}}, "substituted": {stage: path},
                            "log": the binary stage's tool output,
                            "kernels": [{"name", "registers", "spills", "shared_bytes", "local_bytes", ...}]}]}]}

Each target adds fields of its own to its kernels (its `kernel_resources` hook says which); `toolchain` holds
the identity (version and sha256) of every tool that shaped the outputs.
"""
import gzip
import hashlib
import html
import io
import json
import os
import posixpath
import re
import tarfile

from ..errors import CompileError
from ..pipeline.record import read_record, record_without_origins
from ..targets import TARGETS

SCHEMA = "scons-mlir-gpu/manifest"
VERSION = 1
METRICS = ("registers", "spills", "shared_bytes", "local_bytes")
RULE_METRICS = {"registers": "registers", "spills": "spills", "lds": "shared_bytes", "shared": "shared_bytes",
                "scratch": "local_bytes", "local": "local_bytes"}


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _rel(path, root):
    return os.path.relpath(path, root).replace(os.sep, "/")


def _kernels(job, dump_dir, options, toolkit, prefix, record_path):
    """Each kernel's resources, as the job's target reads them from its dumps or tool logs."""
    target = TARGETS.get(job["target"])
    if target is None:
        raise CompileError(f"the record names target '{job['target']}', which is not registered", file=record_path,
                           fix="set MLIRGPU_TARGETS to the module that defines it")
    return target.kernel_resources(job, os.path.join(dump_dir, f"{prefix}{job['stem']}.isa"), options, toolkit)


def find_records(paths):
    """The record files named by `paths`: a record itself, or every record below a folder: `mlirgpu.json` in a
    dump folder (SCons's `<object>.dumps/`), `<prefix>mlirgpu.json` in a flat one (--dump-prefix: Meson, CMake),
    at any depth (a whole build folder)."""
    records = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(os.path.join(folder, name) for folder, _dirs, names in os.walk(path) for name in names
                           if name == "mlirgpu.json" or name.endswith(".mlirgpu.json"))
            if not found:
                raise CompileError("no compile record (mlirgpu.json or <prefix>mlirgpu.json) in this folder or "
                                   "below it", file=path,
                                   fix="build with the dumps on (--dump-intermediates DIR, SCons DUMP=1, CMake "
                                       "-DMLIRGPU_DUMP=ON) and name that build or dump folder")
            records += found
        elif os.path.isfile(path):
            records.append(path)
        else:
            raise CompileError("no such record or dump folder", file=path, fix="name a dump folder or its record")
    return records


def counted(number, singular, plural=None):
    """`1 binary`, `2 binaries`: a count with its noun in the right number."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def tool_version(name, version):
    """`name version`, without repeating a name the version already starts with (`llvmlite 0.50.0`)."""
    return version if str(version).split(" ", 1)[0] == name else f"{name} {version}"


def _checked_sha256(path, record, name, record_path):
    """The file's sha256, which must equal the record's: a file changed after the compile, or restored
    damaged from a build cache, is an error rather than a wrong manifest."""
    try:
        digest = _sha256(path)
    except OSError as exc:
        raise CompileError(f"cannot read '{name}' that the record lists: {exc.strerror}", file=record_path,
                           fix="rebuild the object") from None
    expected = record.get("sha256", {}).get(name)
    if expected is not None and expected != digest:
        raise CompileError(f"'{name}' differs from what the compile wrote (changed since, or restored damaged "
                           "from a cache)", file=record_path, fix="rebuild the object")
    return digest


def _check_object(record, dump_dir, record_path):
    """The object beside the record must be the one the compile wrote (a build cache may restore both)."""
    obj = record.get("object") or {}
    if not isinstance(obj, dict) or not isinstance(obj.get("path"), str) or not isinstance(obj.get("sha256"), str):
        return
    path = os.path.normpath(os.path.join(dump_dir, obj["path"]))
    if os.path.isfile(path) and _sha256(path) != obj["sha256"]:
        raise CompileError(f"the object '{obj['path']}' differs from what the compile wrote (changed since, or "
                           "restored damaged from a cache)", file=record_path, fix="rebuild the object")


def build_manifest(record_paths, root, versions, toolkit=""):
    """The manifest (a dict) for the objects whose records are `record_paths`, paths relative to `root`."""
    objects = []
    for record_path in sorted(record_paths, key=lambda p: _rel(p, root)):
        record = read_record(record_path)
        dump_dir = os.path.dirname(record_path)
        prefix = record.get("dump_prefix", "")
        jobs = []
        for job in record["jobs"]:
            intermediates = {}
            for name in job["dumps"]:
                path = os.path.join(dump_dir, name)
                suffix = name[len(prefix) + len(job["stem"]) + 1:]
                intermediates[suffix] = {"path": _rel(path, root),
                                         "sha256": _checked_sha256(path, record, name, record_path)}
            jobs.append({key: job[key] for key in ("module", "target", "chip", "opt_level", "features")}
                        | {"intermediates": intermediates, "substituted": _substituted(job),
                           "log": job.get("log") if isinstance(job.get("log"), str) else "",
                           "kernels": _kernels(job, dump_dir, record["options"], toolkit, prefix, record_path)})
        _check_object(record, dump_dir, record_path)
        extra = sorted(set(record["dumps"]) - {n for job in record["jobs"] for n in job["dumps"]})
        objects.append({
            "source": record["source"],
            "record": _rel(record_path, root),
            "options": record["options"],
            "warnings": record["warnings"],
            "binaries": record["binaries"],
            "jobs": jobs,
            "other_files": [{"path": _rel(os.path.join(dump_dir, n), root),
                             "sha256": _checked_sha256(os.path.join(dump_dir, n), record, n, record_path)}
                            for n in extra],
        })
    return {"schema": SCHEMA, "version": VERSION, "toolchain": versions, "objects": objects}


def _substituted(job):
    """The job's substituted stages ({stage: substitute path}), from a record of any version."""
    found = job.get("substituted") or {}
    return {str(stage): str(path) for stage, path in found.items()} if isinstance(found, dict) else {}


def substituted_stages(manifest):
    """One line per stage whose output was a hand-edited substitute (a CI gate refuses such builds)."""
    return [f"{obj['source']} @{job['module']} {job['target']} {job['chip']}: {stage} from {path}"
            for obj in manifest["objects"] for job in obj["jobs"]
            for stage, path in sorted(job.get("substituted", {}).items())]


def kernel_rows(manifest):
    """{(source, module, target, chip, kernel): kernel dict} over the whole manifest."""
    rows = {}
    for obj in manifest["objects"]:
        for job in obj["jobs"]:
            for kernel in job["kernels"]:
                rows[(obj["source"], job["module"], job["target"], job["chip"], kernel["name"])] = kernel
    return rows


def _isa_hashes(manifest):
    return {(obj["source"], job["module"], job["target"], job["chip"]): job["intermediates"].get("isa", {}).get("sha256")
            for obj in manifest["objects"] for job in obj["jobs"]}


def compare(manifest, baseline):
    """What changed against a baseline manifest: added/removed kernels, ISA changes, metric deltas."""
    if baseline.get("schema") != SCHEMA:
        raise CompileError("the baseline is not a scons-mlir-gpu manifest", fix="pass a gpu-manifest.json")
    new, old = kernel_rows(manifest), kernel_rows(baseline)
    changes = {"added": sorted(set(new) - set(old)), "removed": sorted(set(old) - set(new)), "metrics": [],
               "isa_changed": []}
    for key in sorted(set(new) & set(old)):
        for metric in METRICS:
            before, after = old[key].get(metric, 0) or 0, new[key].get(metric, 0) or 0
            if before != after:
                changes["metrics"].append((key, metric, before, after))
    new_isa, old_isa = _isa_hashes(manifest), _isa_hashes(baseline)
    changes["isa_changed"] = sorted(k for k in set(new_isa) & set(old_isa) if new_isa[k] != old_isa[k])
    return changes


def parse_rules(text):
    """`spills,registers+10%,lds+1024,isa,removed` -> [(name, metric or None, limit, percent)]."""
    rules = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = re.fullmatch(r"(\w+)(?:\+(\d+(?:\.\d+)?)(%)?)?", item)
        if not match or match.group(1) not in set(RULE_METRICS) | {"isa", "removed", "substituted"}:
            raise CompileError(f"unknown GPU_FAIL_ON rule '{item}'",
                               fix="use spills, registers, lds, scratch (optionally +N or +N%), isa, removed or "
                                   "substituted")
        name = match.group(1)
        rules.append((name, RULE_METRICS.get(name), float(match.group(2) or 0), bool(match.group(3))))
    return rules


def violations(changes, rules, manifest=None):
    """Messages for every change that breaks a rule (`substituted`: any stage made from a substitute, which
    needs no baseline)."""
    found = []
    for name, metric, limit, percent in rules:
        if name == "substituted":
            found += [f"substituted: {line}" for line in substituted_stages(manifest or {"objects": []})]
        elif changes is None:
            continue
        elif name == "isa":
            found += [f"ISA changed: {_label(key)}" for key in changes["isa_changed"]]
        elif name == "removed":
            found += [f"kernel removed: {_label(key)}" for key in changes["removed"]]
        else:
            for key, changed, before, after in changes["metrics"]:
                if changed != metric or after <= before:
                    continue
                allowed = before * (1 + limit / 100) if percent else before + limit
                if after > allowed:
                    found.append(f"{_label(key)}: {metric} {before} -> {after} (rule {name}"
                                 f"{'+' + _number(limit) + ('%' if percent else '') if limit else ''})")
    return found


def _number(value):
    return str(int(value)) if value == int(value) else str(value)


def _label(key):
    return " ".join([key[0], f"@{key[1]}", f"{key[2]} {key[3]}"] + ([key[4]] if len(key) > 4 else []))


def md(text):
    """`text` as literal Markdown: one line, every character Markdown or HTML could read as structure (a table
    cell, a link, an image, emphasis, a tag) escaped, so names from sources never become report structure."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"[\\`*\[\]|~!]", lambda match: "\\" + match.group(), text)
    text = text.replace("://", "\\://").replace("www.", "www\\.")  # no autolinks either
    return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\_", text)  # `_` inside a word is never emphasis


def markdown_report(manifest, changes=None, broken=()):
    lines = ["# GPU kernels", "", f"Manifest schema {md(SCHEMA)} v{VERSION}. Toolchain: " +
             "; ".join(md(tool_version(k, v)) for k, v in sorted(manifest["toolchain"].items())), ""]
    if broken:
        lines += ["## Regressions (the build fails)", ""] + [f"- {md(item)}" for item in broken] + [""]
    if substituted_stages(manifest):
        lines += ["## Substituted stages (hand-edited outputs, not a normal build)", ""] + \
                 [f"- {md(item)}" for item in substituted_stages(manifest)] + [""]
    if changes is not None:
        lines += ["## Changes against the baseline", ""]
        lines += [f"- added: {md(_label(k))}" for k in changes["added"]]
        lines += [f"- removed: {md(_label(k))}" for k in changes["removed"]]
        lines += [f"- ISA changed: {md(_label(k))}" for k in changes["isa_changed"]]
        for key, metric, before, after in changes["metrics"]:
            arrow = "up" if after > before else "down"
            pct = f" ({(after - before) / before * 100:+.0f}%)" if before else ""
            lines.append(f"- {md(_label(key))}: {metric} {arrow} {before} -> {after}{pct}")
        if not any(changes.values()):
            lines.append("- no change")
        lines.append("")
    rows = kernel_rows(manifest)
    with_occupancy = any(kernel.get("occupancy") is not None for kernel in rows.values())
    lines += ["## Kernels", "", "| source | module | target | chip | kernel | registers | spills | shared (bytes) | "
              "local (bytes) |" + (" occupancy |" if with_occupancy else ""),
              "|---|---|---|---|---|---:|---:|---:|---:|" + ("---:|" if with_occupancy else "")]
    for key, kernel in sorted(rows.items()):
        lines.append(f"| {' | '.join(md(part) for part in key)} | "
                     + " | ".join(_cell(kernel.get(metric)) for metric in METRICS) + " |"
                     + (f" {_cell(kernel.get('occupancy'), '')} |" if with_occupancy else ""))
    lines += ["", "## Binaries", "", "| source | module | target | chips | format | section | size |",
              "|---|---|---|---|---|---|---:|"]
    lines += [f"| {md(obj['source'])} | {md(b['module'])} | {md(b['target'])} | {md(','.join(b['chips']))} | "
              f"{md(b['format'])} | {md(b['section'])} | {size_text(b['size'])} |"
              for obj in manifest["objects"] for b in obj["binaries"]]
    return "\n".join(lines) + "\n"


def _cell(value, absent="n/a"):
    """A report cell: the number, or `absent` where the target has no such resource (SPIR-V has no
    registers before the driver compiles it)."""
    return absent if value is None else str(value)


CHART_KERNELS = 40  # bars the chart draws at most: beyond that, the kernels with the most registers


def size_text(size):
    """A byte count as a person reads it: 912 B, 3.8 KiB, 12.4 MiB."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _chart(rows):
    """An inline SVG bar chart of registers per kernel (a red bar beside it for spills, where there are any),
    scaled to the page's width; with more than CHART_KERNELS kernels, those with the most registers."""
    rows = {key: kernel for key, kernel in rows.items() if kernel.get("registers") is not None}
    if not rows:
        return ""
    shown = sorted(rows.items(), key=lambda item: (-item[1]["registers"], item[0]))[:CHART_KERNELS]
    if len(shown) == len(rows):  # all of them: in the table's order; else the heaviest first
        shown.sort(key=lambda item: item[0])
    bar, gap, label_width, width = 16, 6, 330, 900
    scale_max = max([kernel["registers"] for _key, kernel in shown] + [kernel.get("spills") or 0
                                                                       for _key, kernel in shown] + [1])
    room = width - label_width - 120
    height = len(shown) * (bar + gap) + 34
    caption = (f"registers per kernel ({len(shown)} of {len(rows)}: those with the most)" if len(rows) > len(shown)
               else "registers per kernel")
    parts = ['<div class=chart>',
             f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="100%" style="max-width:{width}px;min-width:640px" role="img" aria-label="{caption}">',
             '<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>',
             f'<text x="{label_width}" y="16" font-size="13" fill="#1f5fbf">{html.escape(caption)}</text>',
             f'<text x="{width - 10}" y="16" font-size="13" fill="#c0392b" text-anchor="end">spills in red</text>']
    y = 28
    for key, kernel in shown:
        label = f"{key[4]} ({key[2]} {key[3]})"
        label = label if len(label) <= 48 else label[:45] + "..."
        parts.append(f'<text x="{label_width - 8}" y="{y + bar - 4}" font-size="12" text-anchor="end">'
                     f'{html.escape(label)}<title>{html.escape(_label(key))}</title></text>')
        registers = kernel["registers"]
        length = room * registers / scale_max
        parts.append(f'<rect x="{label_width}" y="{y}" width="{max(length, 1):.1f}" height="{bar}" fill="#1f5fbf">'
                     f"<title>registers: {registers}</title></rect>")
        end = label_width + length
        spills = kernel.get("spills") or 0
        if spills:
            spill_length = room * spills / scale_max
            parts.append(f'<rect x="{end + 2:.1f}" y="{y}" width="{spill_length:.1f}" height="{bar}" fill="#c0392b">'
                         f"<title>spills: {spills}</title></rect>")
            end += spill_length + 2
        text = f"{registers}" + (f" + {spills} spilled" if spills else "")
        parts.append(f'<text x="{end + 5:.1f}" y="{y + bar - 4}" font-size="12">{text}</text>')
        y += bar + gap
    parts.append("</svg></div>")
    return "\n".join(parts)


def _table(header, rows, numeric=()):
    cells = "".join(f'<th{" class=n" if name in numeric else ""}>{html.escape(name)}</th>' for name in header)
    body = [f"<table><tr>{cells}</tr>"]
    for row in rows:
        body.append("<tr>" + "".join(f'<td{" class=n" if name in numeric else ""}>{html.escape(str(cell))}</td>'
                                     for name, cell in zip(header, row)) + "</tr>")
    return "\n".join(body + ["</table>"])


def html_report(manifest, changes=None, broken=(), trace="", diffs=None):
    """A self-contained page (no scripts, no network): what was built (toolchain, binaries with sizes), the
    chart, regressions, changes against the baseline with each changed kernel's deltas and ISA diff (folded),
    substituted stages, compiler logs and the kernel table; a link to the build's trace when there is one."""
    rows = kernel_rows(manifest)
    objects = manifest["objects"]
    binaries = [(obj["source"], b["module"], b["target"], ",".join(b["chips"]), b["format"], b["section"],
                 size_text(b["size"])) for obj in objects for b in obj["binaries"]]
    total = sum(b["size"] for obj in objects for b in obj["binaries"])
    body = ["<h1>GPU kernels</h1>",
            f"<p class=lead>{counted(len(rows), 'kernel')} in {counted(len(binaries), 'binary', 'binaries')} "
            f"({size_text(total)}) from {counted(len(objects), 'object')}.</p>",
            "<p class=tools>Toolchain: " + "; ".join(html.escape(tool_version(name, version))
                                                  for name, version in sorted(manifest["toolchain"].items())) + "</p>"]
    if trace:
        body.append(f'<p>Build trace: <a href="{html.escape(trace)}">{html.escape(trace)}</a> (open it in '
                    "ui.perfetto.dev or chrome://tracing)</p>")
    if broken:
        body += ["<h2>Regressions (the build fails)</h2>", "<ul>"] + \
                [f"<li>{html.escape(item)}</li>" for item in broken] + ["</ul>"]
    if substituted_stages(manifest):
        body += ["<h2>Substituted stages (hand-edited outputs, not a normal build)</h2>", "<ul>"] + \
                [f"<li>{html.escape(item)}</li>" for item in substituted_stages(manifest)] + ["</ul>"]
    if changes is not None:
        body.append("<h2>Changes against the baseline</h2>")
        items = [f"added: {_label(k)}" for k in changes["added"]] + \
                [f"removed: {_label(k)}" for k in changes["removed"]]
        if items:
            body += ["<ul>"] + [f"<li>{html.escape(item)}</li>" for item in items] + ["</ul>"]
        if changes["metrics"]:
            body.append(_table(("kernel", "resource", "before", "after", "change"),
                               [(_label(key), metric.replace("_bytes", " (bytes)"), before, after,
                                 f"{after - before:+d}" + (f" ({(after - before) / before * 100:+.0f}%)" if before
                                                           else ""))
                                for key, metric, before, after in changes["metrics"]],
                               numeric=("before", "after", "change")))
        for key in changes["isa_changed"]:
            diff = (diffs or {}).get(key)
            text = diff if diff else "(the baseline's ISA is not here to compare with)"
            body.append(f"<details><summary>ISA changed: {html.escape(_label(key))}</summary>"
                        f"<pre>{html.escape(text)}</pre></details>")
        if not any(changes.values()):
            body.append("<p>No change.</p>")
    body += ["<h2>Registers</h2>", _chart(rows)]
    logs = [(f"{obj['source']} @{job['module']} {job['target']} {job['chip']}", job["log"])
            for obj in objects for job in obj["jobs"] if job.get("log")]
    if logs:
        body.append("<h2>Compiler logs</h2>")
        body += [f"<details><summary>{html.escape(label)}</summary><pre>{html.escape(text)}</pre></details>"
                 for label, text in logs]
    with_occupancy = any(kernel.get("occupancy") is not None for kernel in rows.values())
    header = ["source", "module", "target", "chip", "kernel", "registers", "spills", "shared (bytes)",
              "local (bytes)"] + (["occupancy"] if with_occupancy else [])
    body += ["<h2>Kernels</h2>", _table(header, [
        list(key) + [_cell(kernel.get(metric)) for metric in METRICS] +
        ([_cell(kernel.get("occupancy"), "")] if with_occupancy else []) for key, kernel in sorted(rows.items())],
        numeric=header[5:])]
    body += ["<h2>Binaries</h2>", _table(("source", "module", "target", "chips", "format", "section", "size"),
                                         binaries, numeric=("size",))]
    style = ("body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
             "table{border-collapse:collapse;font-size:13px;display:block;overflow-x:auto;max-width:100%}"
             "td,th{border:1px solid #ccc;padding:3px 8px;white-space:nowrap}th{background:#f0f0f0}"
             ".chart{overflow-x:auto}.n{text-align:right}.lead{font-size:15px}.tools{color:#555;font-size:12px}"
             "pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}summary{cursor:pointer;margin:4px 0}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
            f"content=\"width=device-width, initial-scale=1\"><title>GPU kernels</title><style>{style}</style>"
            f"</head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def isa_diffs(manifest, out_dir, baseline_manifest, baseline_path):
    """{job key: unified diff of its ISA} for the jobs whose ISA changed, where the baseline's ISA dump is
    still beside its manifest (an unpacked archive); at most 400 lines each."""
    import difflib

    def isa_paths(found, root):
        return {(obj["source"], job["module"], job["target"], job["chip"]):
                os.path.join(root, job["intermediates"]["isa"]["path"])
                for obj in found["objects"] for job in obj["jobs"] if "isa" in job["intermediates"]}

    new, old = isa_paths(manifest, out_dir), isa_paths(baseline_manifest, os.path.dirname(baseline_path))
    diffs = {}
    for key in sorted(set(new) & set(old)):
        try:
            with open(old[key], encoding="utf-8", errors="replace") as a, open(new[key], encoding="utf-8",
                                                                                errors="replace") as b:
                before, after = a.read().splitlines(), b.read().splitlines()
        except OSError:
            continue
        if before != after:
            lines = list(difflib.unified_diff(before, after, "baseline", "this build", lineterm="", n=2))
            diffs[key] = "\n".join(lines[:400] + (["..."] if len(lines) > 400 else []))
    return diffs


def write_archive(members):
    """A reproducible .tar.gz of `members` ({member name: bytes}): sorted, fixed times and owners."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in sorted(members):
                data = members[name]
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def manifest_files(manifest):
    """Every file the manifest lists (paths relative to its folder)."""
    names = []
    for obj in manifest["objects"]:
        names.append(obj["record"])
        names += [item["path"] for item in obj["other_files"]]
        for job in obj["jobs"]:
            names += [item["path"] for item in job["intermediates"].values()]
    return names


OUTPUTS = ("gpu-manifest.json", "gpu-report.md", "gpu-report.html", "gpu-artifacts.tar.gz")


def write_artifacts(record_paths, out_dir, versions, toolkit="", baseline="", fail_on="", trace=""):
    """Write OUTPUTS into `out_dir`; returns the regression messages (the caller fails the build on any).
    `trace`: the build's trace file, which the HTML report links."""
    from ..util.fsutil import write_atomic

    rules = parse_rules(fail_on)
    manifest = build_manifest(record_paths, out_dir, versions, toolkit)
    changes, diffs = None, {}
    if baseline:
        try:
            with open(baseline, encoding="utf-8") as handle:
                baseline_manifest = json.load(handle)
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
    write_atomic(os.path.join(out_dir, names["markdown"]), markdown_report(manifest, changes, broken))
    link = os.path.relpath(trace, out_dir).replace(os.sep, "/") if trace else ""
    write_atomic(os.path.join(out_dir, names["html"]), html_report(manifest, changes, broken, link, diffs))
    write_atomic(os.path.join(out_dir, names["archive"]), write_archive(_archive_members(manifest, out_dir, names)))
    return broken


def _archive_members(manifest, out_dir, names):
    """{member name: bytes}: the reports, the manifest and every file it lists. A file inside the output folder
    keeps its path; one outside it (dumps elsewhere) goes to `outside/<n>-<folder>/`, and the archive's copy of
    the manifest names it there, so no member name holds `..` or an absolute path and the archive unpacks
    anywhere as a whole."""
    mapping, folders = {}, {}
    for path in manifest_files(manifest):
        if path.startswith("../") or path == ".." or os.path.isabs(path):
            folder, name = posixpath.split(path)
            index = folders.setdefault(folder, len(folders))
            mapping[path] = f"outside/{index}-{posixpath.basename(folder) or 'root'}/{name}"
        else:
            mapping[path] = path
    records = {obj["record"] for obj in manifest["objects"]}
    members = {}
    for path, member in mapping.items():
        with open(os.path.join(out_dir, path), "rb") as handle:
            members[member] = record_without_origins(handle.read()) if path in records else handle.read()
    archived = json.loads(json.dumps(manifest))
    for obj in archived["objects"]:
        obj["record"] = mapping[obj["record"]]
        for item in obj["other_files"]:
            item["path"] = mapping[item["path"]]
        for job in obj["jobs"]:
            for item in job["intermediates"].values():
                item["path"] = mapping[item["path"]]
    members[names["manifest"]] = (json.dumps(archived, indent=2, sort_keys=True) + "\n").encode("utf-8")
    for kind in ("markdown", "html"):
        with open(os.path.join(out_dir, names[kind]), "rb") as handle:
            members[names[kind]] = handle.read()
    return members


def toolchain_versions(toolkit=""):
    """Identities of the tools that shape the outputs (versions and hashes, no paths)."""
    from ..compile_options import CompileOptions
    from ..pipeline.planning import tool_identities

    return tool_identities(CompileOptions(toolkit=toolkit))
