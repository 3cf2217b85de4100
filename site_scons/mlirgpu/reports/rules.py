"""A build against a baseline manifest: what changed (kernels added or removed, ISA changed, resources up or
down) and the regression rules of GPU_FAIL_ON (`spills,registers+10%,lds+1024,isa,removed,substituted`) that
fail the build on such a change.
"""
import difflib
import os
import re

from ..errors import CompileError
from .manifest import METRICS, SCHEMA, kernel_label, kernel_rows, substituted_stages

RULE_METRICS = {"registers": "registers", "spills": "spills", "lds": "shared_bytes", "shared": "shared_bytes",
                "scratch": "local_bytes", "local": "local_bytes"}


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


def isa_diffs(manifest, out_dir, baseline_manifest, baseline_path):
    """{job key: unified diff of its ISA} for the jobs whose ISA changed, where the baseline's ISA dump is
    still beside its manifest (an unpacked archive); at most 400 lines each."""
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
            found += [f"ISA changed: {kernel_label(key)}" for key in changes["isa_changed"]]
        elif name == "removed":
            found += [f"kernel removed: {kernel_label(key)}" for key in changes["removed"]]
        else:
            for key, changed, before, after in changes["metrics"]:
                if changed != metric or after <= before:
                    continue
                allowed = before * (1 + limit / 100) if percent else before + limit
                if after > allowed:
                    found.append(f"{kernel_label(key)}: {metric} {before} -> {after} (rule {name}"
                                 f"{'+' + _number(limit) + ('%' if percent else '') if limit else ''})")
    return found


def _number(value):
    return str(int(value)) if value == int(value) else str(value)
