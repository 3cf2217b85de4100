"""A build against a baseline, on manifests made in memory (mlirgpu.reports.rules): what changed (kernels added
and removed, ISA, resources up or down), the GPU_FAIL_ON rules that turn a change into a failure, and the
Markdown the reports write every name from a source through (mlirgpu.reports.rendering.md), which never lets
a name become report structure. Reports of real builds: tests/build/test_artifacts.py."""
import copy

import pytest

from mlirgpu.errors import CompileError
from mlirgpu.reports.manifest import SCHEMA
from mlirgpu.reports.rendering import counted, md, size_text, tool_version
from mlirgpu.reports.rules import compare, parse_rules, violations


def manifest(kernels, isa="aa", substituted=None):
    job = {"module": "k", "target": "rocdl", "chip": "gfx942", "kernels": kernels,
           "intermediates": {"isa": {"path": "k.isa", "sha256": isa}}, "substituted": substituted or {}}
    return {"schema": SCHEMA, "version": 1, "objects": [{"source": "k.mlir", "jobs": [job]}]}


BASE = manifest([{"name": "saxpy", "registers": 40, "spills": 0, "shared_bytes": 0, "local_bytes": 0},
                 {"name": "old", "registers": 8, "spills": 0, "shared_bytes": 0, "local_bytes": 0}])


def test_a_comparison_names_every_change():
    new = copy.deepcopy(BASE)
    kernels = new["objects"][0]["jobs"][0]["kernels"]
    kernels[0].update(registers=48, spills=2)
    kernels[1]["name"] = "fresh"
    new["objects"][0]["jobs"][0]["intermediates"]["isa"]["sha256"] = "bb"
    changes = compare(new, BASE)
    saxpy = ("k.mlir", "k", "rocdl", "gfx942", "saxpy")
    assert changes["added"] == [saxpy[:4] + ("fresh",)] and changes["removed"] == [saxpy[:4] + ("old",)]
    assert changes["metrics"] == [(saxpy, "registers", 40, 48), (saxpy, "spills", 0, 2)]
    assert changes["isa_changed"] == [("k.mlir", "k", "rocdl", "gfx942")]
    assert compare(BASE, copy.deepcopy(BASE)) == {"added": [], "removed": [], "metrics": [], "isa_changed": []}


def test_a_baseline_that_is_no_manifest_is_refused():
    with pytest.raises(CompileError, match="not a scons-mlir-gpu manifest"):
        compare(BASE, {"schema": "something else"})


def test_rules_read_their_limits():
    assert parse_rules("spills, registers+10%,lds+1024,isa,,removed,substituted") == [
        ("spills", "spills", 0.0, False), ("registers", "registers", 10.0, True), ("lds", "shared_bytes", 1024.0, False),
        ("isa", None, 0.0, False), ("removed", None, 0.0, False), ("substituted", None, 0.0, False)]
    for bad in ("speed", "registers+", "registers-10", "lds+1k"):
        with pytest.raises(CompileError, match="unknown GPU_FAIL_ON rule"):
            parse_rules(bad)


def test_a_change_breaks_a_rule_only_beyond_its_limit():
    saxpy = ("k.mlir", "k", "rocdl", "gfx942", "saxpy")
    changes = {"added": [], "removed": [saxpy[:4] + ("old",)], "isa_changed": [saxpy[:4]],
               "metrics": [(saxpy, "registers", 40, 44), (saxpy, "spills", 3, 1), (saxpy, "shared_bytes", 0, 2048)]}
    assert violations(changes, parse_rules("registers+10%,spills,lds+1024")) == [
        "k.mlir @k rocdl gfx942 saxpy: shared_bytes 0 -> 2048 (rule lds+1024)"]  # 44 is 10% up; fewer spills
    assert violations(changes, parse_rules("registers+5%")) == [
        "k.mlir @k rocdl gfx942 saxpy: registers 40 -> 44 (rule registers+5%)"]
    assert violations(changes, parse_rules("isa,removed")) == ["ISA changed: k.mlir @k rocdl gfx942",
                                                               "kernel removed: k.mlir @k rocdl gfx942 old"]


def test_substituted_stages_fail_without_a_baseline():
    edited = manifest([], substituted={"isa": "mine.isa"})
    assert violations(None, parse_rules("substituted,isa"), edited) == [
        "substituted: k.mlir @k rocdl gfx942: isa from mine.isa"]
    assert violations(None, parse_rules("substituted"), BASE) == []


@pytest.mark.parametrize("name,shown", [
    ("a|b", "a\\|b"),  # not a table cell
    ("[x](http://e.com)", "\\[x\\](http\\://e.com)"),  # no link, no autolink
    ("<img src=x>", "&lt;img src=x&gt;"),
    ("*bold* _it_ snake_case", "\\*bold\\* \\_it\\_ snake_case"),
    ("two\nlines", "two lines"),
    ("`code` ~x~ !", "\\`code\\` \\~x\\~ \\!"),
])
def test_a_name_from_a_source_stays_text_in_markdown(name, shown):
    assert md(name) == shown


def test_counts_sizes_and_versions_read_as_a_person_writes_them():
    assert (counted(1, "binary", "binaries"), counted(2, "binary", "binaries"), counted(3, "kernel")) == (
        "1 binary", "2 binaries", "3 kernels")
    assert [size_text(n) for n in (912, 1024, 3891, 13002342)] == ["912 B", "1.0 KiB", "3.8 KiB", "12.4 MiB"]
    assert tool_version("llvmlite", "llvmlite 0.50.0") == "llvmlite 0.50.0"
    assert tool_version("ptxas", "12.8.93") == "ptxas 12.8.93"
