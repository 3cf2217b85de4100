"""The architecture is checked, not hoped for: the import-linter layers of pyproject.toml hold, the package has no
import cycle, no module outside `mlirgpu.targets` names a target, and a target defined outside the package runs
through planning, the SCons emitter and the CLI."""
import itertools
import json
import os
import re
import subprocess
import sys

import grimp

from corpusutil import CORPUS, ROOT
from sconsutil import SCONS, TOOLPATH

PACKAGE = os.path.join(ROOT, "site_scons", "mlirgpu")
TESTS = os.path.join(ROOT, "tests")  # the shared helpers (toy_target.py)


def test_import_linter_contract_holds():
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lint-imports")], cwd=ROOT,
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons")))
    assert run.returncode == 0 and "2 kept, 0 broken" in run.stdout, run.stdout + run.stderr


def test_the_folders_are_the_layers():
    """Every module is in a subpackage named by the layers contract, except the package's face (the lazy API and
    the SCons tool's entry, the command's `-m` entry) and the vocabulary every layer speaks (errors, version,
    options): a new module must pick its room."""
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        contracts = tomllib.load(handle)["tool"]["importlinter"]["contracts"]
    layers = {name.strip() for contract in contracts if contract["type"] == "layers"
              for row in contract["layers"] for name in row.split("|")}
    face = {"__init__.py", "__main__.py", "errors.py", "version.py", "compile_options.py"}
    loose = sorted(name for name in os.listdir(PACKAGE) if name.endswith(".py") and name not in face)
    assert loose == []
    subpackages = {f"mlirgpu.{name}" for name in os.listdir(PACKAGE)
                   if os.path.isfile(os.path.join(PACKAGE, name, "__init__.py"))}
    assert subpackages - {"mlirgpu.cmake"} <= layers, subpackages - layers
    assert {f"mlirgpu.{name[:-3]}" for name in face - {"__init__.py", "__main__.py"}} <= layers


def test_no_import_cycle():
    sys.path.insert(0, os.path.join(ROOT, "site_scons"))
    graph = grimp.build_graph("mlirgpu")
    modules = sorted(graph.modules)
    cycles = [(a, b) for a, b in itertools.combinations(modules, 2)
              if graph.chain_exists(importer=a, imported=b) and graph.chain_exists(importer=b, imported=a)
              and "mlirgpu" not in (a, b)]  # the package itself only names its modules lazily
    assert cycles == []


def test_no_module_outside_targets_names_a_target():
    from mlirgpu.targets import BUILT_IN

    names = "|".join(re.escape(word) for target in BUILT_IN
                     for word in (target.name, target.attribute.split(".")[0], type(target).__name__))
    pattern = re.compile(rf"(?<![/\-])\b({names})\b(?![/\-])", re.I)  # not a toolkit path (`nvvm/libdevice`)
    found = []
    for folder, _dirs, files in os.walk(PACKAGE):
        if os.path.relpath(folder, PACKAGE).split(os.sep)[0] in ("targets", "__pycache__"):
            continue
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    for number, line in enumerate(handle, 1):
                        if pattern.search(line):
                            found.append(f"{name}:{number}: {line.strip()}")
    assert found == []


ENV = dict(os.environ, MLIRGPU_TARGETS="toy_target",
           PYTHONPATH=os.pathsep.join([TESTS, os.path.join(ROOT, "site_scons")]))


def test_a_target_defined_outside_the_package(tmp_path):
    """tests/toy_target.py (a variant of an existing target) registered through MLIRGPU_TARGETS: planned by the
    CLI, compiled by the CLI, declared and built by SCons, without a change to the package."""
    source = os.path.join(CORPUS, "vecadd.neutral.mlir")
    listed = subprocess.run([sys.executable, "-m", "mlirgpu", "list-outputs", source, "-o", "k.o", "--target", "toy",
                             "--dump-intermediates", "D"], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert listed.returncode == 0, listed.stderr
    assert "D/vecadd_neutral.toy" in listed.stdout.split()
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", "k.o", "--target", "toy",
                          "--dump-intermediates", "D"], cwd=tmp_path, capture_output=True, text=True, env=ENV)
    assert run.returncode == 0, run.stderr
    assert sorted(os.listdir(tmp_path / "D")) == sorted(os.path.basename(p) for p in listed.stdout.split()[1:])
    record = json.loads((tmp_path / "D" / "mlirgpu.json").read_text())
    assert [job["target"] for job in record["jobs"]] == ["toy"] and record["jobs"][0]["chip"] == "sm_80"
    assert (tmp_path / "D" / "vecadd_neutral.toy").read_bytes()[:4] == b"\x7fELF"

    project = tmp_path / "p"
    project.mkdir()
    (project / "k.mlir").write_text(open(source).read())
    (project / "SConstruct").write_text(f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
                                        "env.GpuObject('k', 'k.mlir')\n")
    build = subprocess.run([SCONS, "-Q", "GPU_TARGET=toy", "DUMP=1"], cwd=project, capture_output=True, text=True,
                           env=ENV)
    assert build.returncode == 0, build.stderr
    assert (project / "k.dumps" / "vecadd_neutral.toy").exists()
    assert "up to date" in subprocess.run([SCONS, "-Q", "GPU_TARGET=toy", "DUMP=1"], cwd=project,
                                          capture_output=True, text=True, env=ENV).stdout
    help_text = subprocess.run([SCONS, "-h"], cwd=project, capture_output=True, text=True, env=ENV).stdout
    assert re.search(r"^GPU_TARGET: .*\(\|nvvm\|rocdl\|xevm\|toy\)", help_text, re.M)


def test_a_plugin_that_cannot_load_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", os.path.join(CORPUS, "vecadd.neutral.mlir"),
                          "-o", str(tmp_path / "k.o"), "--target", "nvvm"], capture_output=True, text=True,
                         env=dict(ENV, MLIRGPU_TARGETS="no_such_target_module"))
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert "MLIRGPU_TARGETS names 'no_such_target_module'" in run.stderr


def test_the_design_page_names_every_module():
    """docs/design.md's map of the rooms names every subpackage and module, so the map cannot fall behind."""
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as handle:
        words = set(re.findall(r"[A-Za-z_]+", handle.read()))
    missing = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        if folder != PACKAGE and os.path.basename(folder) not in words:
            missing.append(os.path.relpath(folder, PACKAGE))
        missing += [os.path.relpath(os.path.join(folder, name), PACKAGE) for name in files
                    if name.endswith(".py") and name not in ("__init__.py", "__main__.py") and name[:-3] not in words]
    assert missing == []


def test_no_module_is_over_450_lines():
    """A module that grows past this holds more than one concern: split it by concern."""
    long = []
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    count = sum(1 for _ in handle)
                if count > 450:
                    long.append(f"{os.path.relpath(os.path.join(folder, name), PACKAGE)}: {count}")
    assert long == []
