"""The human reports of a manifest: Markdown for a CI summary page, and a self-contained HTML page (no scripts,
no network) with an SVG chart of registers and spills per kernel. Every name from a source is escaped, so it
never becomes report structure.
"""
import html
import re

from .manifest import METRICS, SCHEMA, VERSION, kernel_label, kernel_rows, substituted_stages


def counted(number, singular, plural=None):
    """`1 binary`, `2 binaries`: a count with its noun in the right number."""
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


def tool_version(name, version):
    """`name version`, without repeating a name the version already starts with (`llvmlite 0.50.0`)."""
    return version if str(version).split(" ", 1)[0] == name else f"{name} {version}"


def md(text):
    """`text` as literal Markdown: one line, every character Markdown or HTML could read as structure (a table
    cell, a link, an image, emphasis, a tag) escaped, so names from sources never become report structure."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"[\\`*\[\]|~!]", lambda match: "\\" + match.group(), text)
    text = text.replace("://", "\\://").replace("www.", "www\\.")  # no autolinks either
    return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\_", text)  # `_` inside a word is never emphasis


def library_rows(manifest):
    """One row per library file: (library source, modules, target, chip, file, size, stages, linked by), the
    libraries this manifest holds first, then files linked from elsewhere (source `(not built here)`)."""
    users = {}
    for obj in manifest["objects"] + manifest.get("libraries", []):
        for job in obj["jobs"]:
            for item in job.get("libraries", []):
                users.setdefault(item["path"], []).append(f"{obj['source']} @{job['module']}")
    rows, built = [], set()
    for library in manifest.get("libraries", []):
        stages = dict.fromkeys(suffix for job in library["jobs"] for suffix in job["intermediates"])  # stage order
        for item in library["files"]:
            built.add(item["path"])
            rows.append((library["source"], ",".join(item["modules"]), item["target"], item["chip"], item["path"],
                         size_text(item["size"]), ", ".join(stages), ", ".join(users.get(item["path"], []))))
    rows += [("(not built here)", "", "", "", path, "n/a", "", ", ".join(names))
             for path, names in sorted(users.items()) if path not in built]
    return rows


LIBRARY_HEADER = ("library", "modules", "target", "chip", "file", "size", "stages dumped", "linked by")


def _fence(text):
    """A Markdown code fence longer than any run of backticks in `text`, so the text never closes it."""
    return "`" * max([3] + [len(run) + 1 for run in re.findall(r"`+", text)])


def markdown_report(manifest, changes=None, broken=(), diffs=None):
    lines = ["# GPU kernels", "", f"Manifest schema {md(SCHEMA)} v{VERSION}. Toolchain: " +
             "; ".join(md(tool_version(k, v)) for k, v in sorted(manifest["toolchain"].items())), ""]
    if broken:
        lines += ["## Regressions (the build fails)", ""] + [f"- {md(item)}" for item in broken] + [""]
    if substituted_stages(manifest):
        lines += ["## Substituted stages (hand-edited outputs, not a normal build)", ""] + \
                 [f"- {md(item)}" for item in substituted_stages(manifest)] + [""]
    if changes is not None:
        lines += ["## Changes against the baseline", ""]
        lines += [f"- added: {md(kernel_label(k))}" for k in changes["added"]]
        lines += [f"- removed: {md(kernel_label(k))}" for k in changes["removed"]]
        lines += [f"- ISA changed: {md(kernel_label(k))}" for k in changes["isa_changed"]]
        for key, metric, before, after in changes["metrics"]:
            arrow = "up" if after > before else "down"
            pct = f" ({(after - before) / before * 100:+.0f}%)" if before else ""
            lines.append(f"- {md(kernel_label(key))}: {metric} {arrow} {before} -> {after}{pct}")
        if not any(changes.values()):
            lines.append("- no change")
        lines.append("")
        for key in changes["isa_changed"]:  # folded, as GitHub's step summary and pull requests show <details>
            diff = (diffs or {}).get(key) or "(the baseline's ISA is not here to compare with)"
            label = html.escape(" ".join(kernel_label(key).split()))
            lines += [f"<details><summary>ISA diff: {label}</summary>", "", _fence(diff) + "diff", diff,
                      _fence(diff), "", "</details>", ""]
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
    libraries = library_rows(manifest)
    if libraries:
        lines += ["", "## Libraries", "", "| " + " | ".join(LIBRARY_HEADER) + " |",
                  "|---|---|---|---|---|---:|---|---|"]
        lines += ["| " + " | ".join(md(cell) for cell in row) + " |" for row in libraries]
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
                     f'{html.escape(label)}<title>{html.escape(kernel_label(key))}</title></text>')
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
            f"({size_text(total)}) from {counted(len(objects), 'object')}"
            + (f" and {counted(len(manifest['libraries']), 'library', 'libraries')}" if manifest.get("libraries")
               else "") + ".</p>",
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
        items = [f"added: {kernel_label(k)}" for k in changes["added"]] + \
                [f"removed: {kernel_label(k)}" for k in changes["removed"]]
        if items:
            body += ["<ul>"] + [f"<li>{html.escape(item)}</li>" for item in items] + ["</ul>"]
        if changes["metrics"]:
            body.append(_table(("kernel", "resource", "before", "after", "change"),
                               [(kernel_label(key), metric.replace("_bytes", " (bytes)"), before, after,
                                 f"{after - before:+d}" + (f" ({(after - before) / before * 100:+.0f}%)" if before
                                                           else ""))
                                for key, metric, before, after in changes["metrics"]],
                               numeric=("before", "after", "change")))
        for key in changes["isa_changed"]:
            diff = (diffs or {}).get(key)
            text = diff if diff else "(the baseline's ISA is not here to compare with)"
            body.append(f"<details><summary>ISA changed: {html.escape(kernel_label(key))}</summary>"
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
    if library_rows(manifest):
        body += ["<h2>Libraries</h2>", _table(LIBRARY_HEADER, library_rows(manifest), numeric=("size",))]
    style = ("body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
             "table{border-collapse:collapse;font-size:13px;display:block;overflow-x:auto;max-width:100%}"
             "td,th{border:1px solid #ccc;padding:3px 8px;white-space:nowrap}th{background:#f0f0f0}"
             ".chart{overflow-x:auto}.n{text-align:right}.lead{font-size:15px}.tools{color:#555;font-size:12px}"
             "pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px}summary{cursor:pointer;margin:4px 0}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
            f"content=\"width=device-width, initial-scale=1\"><title>GPU kernels</title><style>{style}</style>"
            f"</head><body>\n" + "\n".join(body) + "\n</body></html>\n")
