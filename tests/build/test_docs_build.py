"""The documentation against real runs: MkDocs builds the site in strict mode, and the fields of a real compile's
record and manifest are those docs/reference.md lists."""
import os
import re

from corpusutil import ROOT

REFERENCE = os.path.join(ROOT, "docs", "reference.md")


def reference():
    with open(REFERENCE, encoding="utf-8") as handle:
        return handle.read()


# Fields whose keys are data (file names, stages, tools): documented as `<field>.*`.
MAPS = {"sha256", "jobs[].stages", "jobs[].substituted", "toolchain", "objects[].jobs[].intermediates",
        "objects[].jobs[].substituted", "libraries[].jobs[].intermediates", "libraries[].jobs[].substituted"}


def _fields(value, prefix=""):
    """Every field path of a JSON value (`a.b`, `a[].b`), a map's keys as `*`."""
    found = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            found |= {f"{path}.*"} if path in MAPS else _fields(item, path)
    elif isinstance(value, list):
        for item in value:
            found |= _fields(item, prefix + "[]")
    return found


def _documented(heading):
    """The field paths a section's table names: every backticked path in the first cell of its rows."""
    text = reference().split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    fields = set()
    for row in re.findall(r"^\| (.+?) \|", text, re.M):
        fields |= {name for name in re.findall(r"`([^`]+)`", row)}
    return fields - {"field"}


def test_the_documentation_builds_in_strict_mode(tmp_path):
    """MkDocs builds docs/ in strict mode: a link to a page or anchor that is not there fails the build."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "index.html").exists()


def test_the_record_and_manifest_fields_are_those_of_the_reference(tmp_path):
    """A real NVVM compile linking a library file and a ROCDL compile with dumps, a library compile (linking the
    file too), and the manifest of them all: every field they hold has its line, and every line names a field
    they hold (kernel resources: the union of both targets')."""
    import json
    import subprocess
    import sys

    from corpusutil import CORPUS, instantiate

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
    (tmp_path / "extra.ll").write_text('target triple = "nvptx64-nvidia-cuda"\n'
                                       "define float @extra(float %x) {\n  ret float %x\n}\n")
    for name, family, chip in (("k", "nvvm", "sm_80"), ("a", "rocdl", "gfx90a")):
        source = instantiate(os.path.join(CORPUS, f"saxpy.{family}.mlir"), tmp_path / f"{name}.mlir", chip, 3)
        subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(tmp_path / f"{name}.o"),
                        "--format", "bin", "--dump-intermediates", str(tmp_path / f"{name}.dumps"),
                        "-l", "extra.ll"], check=True, env=env, cwd=tmp_path)
    # A library compile's record (emit=library) adds what it wrote; the manifest lists it under `libraries`.
    subprocess.run([sys.executable, "-m", "mlirgpu", "compile", "--emit", "library", str(tmp_path / "k.mlir"),
                    "-o", str(tmp_path / "lib" / "k"), "--dump-intermediates", str(tmp_path / "lib" / "k.dumps"),
                    "-l", "extra.ll"], check=True, env=env, cwd=tmp_path)
    subprocess.run([sys.executable, "-m", "mlirgpu", "artifacts", ".", "-o", "art"], check=True, env=env,
                   cwd=tmp_path, capture_output=True)
    record = set()
    for name in ("k.dumps", "a.dumps", "lib/k.dumps"):
        with open(tmp_path / name / "mlirgpu.json", encoding="utf-8") as handle:
            record |= _fields(json.load(handle))
    assert sorted(record ^ _documented("The record")) == []
    with open(tmp_path / "art" / "gpu-manifest.json", encoding="utf-8") as handle:
        found = json.load(handle)
    assert [library["source"] for library in found["libraries"]] == ["k.mlir"]
    manifest = _fields(found)
    documented = _documented("The CI manifest")
    as_record = {field for field in documented if field.endswith("[].*") or field.endswith("[].options.*")}
    covered = {field for field in manifest if any(field.startswith(prefix[:-1]) for prefix in as_record)}
    assert sorted((manifest - covered) ^ (documented - as_record)) == []
