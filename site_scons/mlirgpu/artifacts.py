"""CI artifacts: one manifest of everything the GPU compiles produced, human reports, a baseline comparison
with regression rules, and a reproducible archive. Built from the per-object records (`mlirgpu.json`) that every
compile with dumps writes, so it works for SCons, the CLI or any other build system.

Manifest schema `scons-mlir-gpu/manifest`, version 1 (all paths relative to the manifest's folder):

    {"schema": ..., "version": 1, "toolchain": {name: version},
     "objects": [{"source", "record", "options": {...}, "warnings": [...],
                  "binaries": [{"symbol", "module", "target", "chips", "format", "section", "size", "sha256"}],
                  "jobs": [{"module", "target", "chip", "opt_level", "features",
                            "intermediates": {suffix: {"path", "sha256"}},
                            "kernels": [{"name", "registers", "spills", "shared_bytes", "local_bytes", ...}]}]}]}

NVVM kernels add `barriers`, `constant_bytes`, `spill_stores`, `spill_loads` (bytes, from `ptxas -v`); ROCDL
kernels add `vgprs`, `agprs`, `sgprs`, `vgpr_spills`, `sgpr_spills`, `wavefront_size` and `occupancy` (waves per
SIMD limited by VGPRs, on CDNA chips; null elsewhere).
"""
import gzip
import hashlib
import html
import io
import json
import os
import re
import tarfile

from . import resources, toolchain
from .errors import CompileError

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


def _kernels(job, dump_dir, options, toolkit):
    isa_path = os.path.join(dump_dir, f"{job['stem']}.isa")
    if job["target"] == "nvvm":
        ptxas = toolchain.cuda_tool("ptxas", toolchain.cuda_toolkit(toolkit or None))
        extra = options.get("opts", "").split()
        return resources.nvvm_kernels(ptxas, isa_path, job["chip"], job["opt_level"], extra)
    with open(isa_path, encoding="utf-8") as handle:
        return resources.rocdl_kernels(handle.read(), job["chip"])


def build_manifest(record_paths, root, versions, toolkit=""):
    """The manifest (a dict) for the objects whose records are `record_paths`, paths relative to `root`."""
    objects = []
    for record_path in sorted(record_paths, key=lambda p: _rel(p, root)):
        with open(record_path, encoding="utf-8") as handle:
            record = json.load(handle)
        dump_dir = os.path.dirname(record_path)
        jobs = []
        for job in record["jobs"]:
            intermediates = {}
            for name in job["dumps"]:
                path = os.path.join(dump_dir, name)
                suffix = name[len(record.get("dump_prefix", "")) + len(job["stem"]) + 1:]
                intermediates[suffix] = {"path": _rel(path, root), "sha256": _sha256(path)}
            jobs.append({key: job[key] for key in ("module", "target", "chip", "opt_level", "features")}
                        | {"intermediates": intermediates,
                           "kernels": _kernels(job, dump_dir, record["options"], toolkit)})
        extra = sorted(set(record["dumps"]) - {n for job in record["jobs"] for n in job["dumps"]})
        objects.append({
            "source": record["source"],
            "record": _rel(record_path, root),
            "options": record["options"],
            "warnings": record["warnings"],
            "binaries": record["binaries"],
            "jobs": jobs,
            "other_files": [{"path": _rel(os.path.join(dump_dir, n), root),
                             "sha256": _sha256(os.path.join(dump_dir, n))} for n in extra],
        })
    return {"schema": SCHEMA, "version": VERSION, "toolchain": versions, "objects": objects}


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
        if not match or match.group(1) not in set(RULE_METRICS) | {"isa", "removed"}:
            raise CompileError(f"unknown GPU_FAIL_ON rule '{item}'",
                               fix="use spills, registers, lds, scratch (optionally +N or +N%), isa or removed")
        name = match.group(1)
        rules.append((name, RULE_METRICS.get(name), float(match.group(2) or 0), bool(match.group(3))))
    return rules


def violations(changes, rules):
    """Messages for every change that breaks a rule."""
    found = []
    for name, metric, limit, percent in rules:
        if name == "isa":
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


def markdown_report(manifest, changes=None, broken=()):
    lines = ["# GPU kernels", "", f"Manifest schema {SCHEMA} v{VERSION}. Toolchain: " +
             "; ".join(f"{k} {v}" for k, v in sorted(manifest["toolchain"].items())), ""]
    if broken:
        lines += ["## Regressions (the build fails)", ""] + [f"- {item}" for item in broken] + [""]
    if changes is not None:
        lines += ["## Changes against the baseline", ""]
        lines += [f"- added: {_label(k)}" for k in changes["added"]]
        lines += [f"- removed: {_label(k)}" for k in changes["removed"]]
        lines += [f"- ISA changed: {_label(k)}" for k in changes["isa_changed"]]
        for key, metric, before, after in changes["metrics"]:
            arrow = "up" if after > before else "down"
            pct = f" ({(after - before) / before * 100:+.0f}%)" if before else ""
            lines.append(f"- {_label(key)}: {metric} {arrow} {before} -> {after}{pct}")
        if not any(changes.values()):
            lines.append("- no change")
        lines.append("")
    lines += ["## Kernels", "", "| source | module | target | chip | kernel | registers | spills | shared | local | occupancy |",
              "|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for key, kernel in sorted(kernel_rows(manifest).items()):
        occupancy = kernel.get("occupancy")
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {kernel['registers']} | "
                     f"{kernel['spills']} | {kernel['shared_bytes']} | {kernel['local_bytes']} | "
                     f"{'' if occupancy is None else occupancy} |")
    return "\n".join(lines) + "\n"


def _chart(rows):
    """An inline SVG bar chart of registers (blue) and spills (red) per kernel."""
    bar_height, gap, label_width, width = 14, 8, 360, 760
    scale_max = max([kernel["registers"] for kernel in rows.values()] + [kernel["spills"] for kernel in rows.values()]
                    + [1])
    height = max(1, len(rows)) * (2 * bar_height + gap) + 40
    parts = [f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="registers and spills per kernel">',
             '<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>',
             f'<text x="{label_width}" y="16" font-size="12" fill="#1f5fbf">registers</text>',
             f'<text x="{label_width + 90}" y="16" font-size="12" fill="#c0392b">spills</text>']
    y = 28
    for key, kernel in sorted(rows.items()):
        label = html.escape(f"{key[4]} ({key[2]} {key[3]})")
        parts.append(f'<text x="{label_width - 6}" y="{y + bar_height}" font-size="11" text-anchor="end">{label}</text>')
        for metric, color in (("registers", "#1f5fbf"), ("spills", "#c0392b")):
            value = kernel[metric]
            length = (width - label_width - 60) * value / scale_max
            parts.append(f'<rect x="{label_width}" y="{y}" width="{length:.1f}" height="{bar_height - 2}" '
                         f'fill="{color}"><title>{metric}: {value}</title></rect>')
            parts.append(f'<text x="{label_width + length + 4:.1f}" y="{y + bar_height - 3}" font-size="10">{value}</text>')
            y += bar_height
        y += gap
    parts.append("</svg>")
    return "\n".join(parts)


def html_report(manifest, changes=None, broken=()):
    """A self-contained page (no scripts, no network): the chart, regressions, changes and the kernel table."""
    rows = kernel_rows(manifest)
    body = ["<h1>GPU kernels</h1>", _chart(rows)]
    if broken:
        body += ["<h2>Regressions (the build fails)</h2>", "<ul>"] + \
                [f"<li>{html.escape(item)}</li>" for item in broken] + ["</ul>"]
    if changes is not None:
        items = [f"added: {_label(k)}" for k in changes["added"]] + \
                [f"removed: {_label(k)}" for k in changes["removed"]] + \
                [f"ISA changed: {_label(k)}" for k in changes["isa_changed"]] + \
                [f"{_label(k)}: {m} {b} -> {a}" for k, m, b, a in changes["metrics"]]
        body += ["<h2>Changes against the baseline</h2>", "<ul>"] + \
                [f"<li>{html.escape(item)}</li>" for item in items or ["no change"]] + ["</ul>"]
    body += ["<h2>Kernels</h2>", "<table><tr><th>source</th><th>module</th><th>target</th><th>chip</th>"
             "<th>kernel</th><th>registers</th><th>spills</th><th>shared</th><th>local</th><th>occupancy</th></tr>"]
    for key, kernel in sorted(rows.items()):
        cells = list(key) + [kernel["registers"], kernel["spills"], kernel["shared_bytes"], kernel["local_bytes"],
                             "" if kernel.get("occupancy") is None else kernel["occupancy"]]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    body.append("</table>")
    style = ("body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:3px 8px}th{background:#f0f0f0}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>GPU kernels</title><style>{style}</style>"
            f"</head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_archive(path, root, members):
    """A reproducible .tar.gz of `members` (paths relative to `root`): sorted, fixed times and owners."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in sorted(set(members)):
                with open(os.path.join(root, name), "rb") as handle:
                    data = handle.read()
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


def write_artifacts(record_paths, out_dir, versions, toolkit="", baseline="", fail_on=""):
    """Write OUTPUTS into `out_dir`; returns the regression messages (the caller fails the build on any)."""
    from .fsutil import write_atomic

    rules = parse_rules(fail_on)
    manifest = build_manifest(record_paths, out_dir, versions, toolkit)
    changes = None
    if baseline:
        try:
            with open(baseline, encoding="utf-8") as handle:
                changes = compare(manifest, json.load(handle))
        except (OSError, ValueError) as exc:
            raise CompileError(f"cannot read the baseline manifest: {exc}", file=baseline,
                               fix="pass the gpu-manifest.json of an earlier build") from exc
    elif rules:
        raise CompileError("GPU_FAIL_ON needs a baseline", fix="set GPU_BASELINE to an earlier gpu-manifest.json")
    broken = violations(changes, rules) if changes is not None else []
    names = dict(zip(("manifest", "markdown", "html", "archive"), OUTPUTS))
    write_atomic(os.path.join(out_dir, names["manifest"]), json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    write_atomic(os.path.join(out_dir, names["markdown"]), markdown_report(manifest, changes, broken))
    write_atomic(os.path.join(out_dir, names["html"]), html_report(manifest, changes, broken))
    members = manifest_files(manifest) + [names["manifest"], names["markdown"], names["html"]]
    write_atomic(os.path.join(out_dir, names["archive"]), write_archive(names["archive"], out_dir, members))
    return broken


def toolchain_versions(toolkit=""):
    """Versions of the tools that shape the outputs (no paths)."""
    from . import __version__

    versions = {"mlirgpu": __version__, "mlir": toolchain.tool_version(toolchain.llvm_tool("mlir-opt"))}
    try:
        import importlib.metadata

        versions["llvmlite"] = importlib.metadata.version("llvmlite")
    except importlib.metadata.PackageNotFoundError:
        pass
    cuda = toolchain.cuda_toolkit(toolkit or None)
    if cuda and os.path.isfile(os.path.join(cuda, "bin", "ptxas")):
        versions["ptxas"] = toolchain.tool_version(os.path.join(cuda, "bin", "ptxas"))
    return versions
