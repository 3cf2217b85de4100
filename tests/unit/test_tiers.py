"""The suite's own rules, checked on small suites of their own run in this process (pytester): a tool this
machine lacks skips the tests that need it, with what installs it, except under `./dev test`
(MLIRGPU_TEST_REQUIRE_ALL=1, as CI runs), which installs everything and so fails them; each test's tier is its
folder, and a test file outside a tier folder stops the run naming the folders. The tiers are the same in the
folders, the markers pyproject.toml declares and the steps ./dev test runs."""
import os
import re
import tomllib

import pytest

import tier_rules
from corpusutil import ROOT

TESTS = os.path.join(ROOT, "tests")
PROBE = """\
import pytest
from needs import missing

@pytest.mark.needs("no-such-program-anywhere", "apt install no-such-program")
def test_marked():
    pass

def test_fixture_style():
    missing("a toy toolkit", "pip install toy")
"""
# The rules as tests/conftest.py applies them, to the suite in this conftest's own folder.
CONFTEST = """\
import os
import tier_rules
from needs import check_marks

HERE = os.path.dirname(os.path.abspath(__file__))

def pytest_configure(config):
    config.addinivalue_line("markers", "needs(program, install)")
    for tier in tier_rules.TIERS:
        config.addinivalue_line("markers", tier)

def pytest_runtest_setup(item):
    check_marks(item)

def pytest_collect_file(file_path, parent):
    tier_rules.refuse_misplaced(str(file_path), HERE)

def pytest_collection_modifyitems(config, items):
    tier_rules.mark(items, HERE)
"""


def _suite(pytester, monkeypatch):
    """A suite with the repository's rules: its conftest, and pyproject.toml's folders never searched for tests."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        skipped = tomllib.load(handle)["tool"]["pytest"]["ini_options"]["norecursedirs"]
    pytester.makeini(f"[pytest]\nnorecursedirs = {' '.join(skipped)}\n")
    pytester.makepyfile(conftest=CONFTEST)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # none of the installed plugins: a quick run


def _run(pytester, *args):
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rsf", *args)


@pytest.mark.parametrize("required", [False, True])
def test_a_missing_tool_skips_with_its_fix_unless_everything_is_required(pytester, monkeypatch, required):
    _suite(pytester, monkeypatch)
    pytester.mkdir("unit")
    (pytester.path / "unit" / "test_probe.py").write_text(PROBE)
    monkeypatch.setenv("MLIRGPU_TEST_REQUIRE_ALL", "1" if required else "")
    run = _run(pytester)
    if required:
        run.assert_outcomes(failed=1, errors=1)  # the mark fails in set-up, the fixture style in the test
    else:
        run.assert_outcomes(skipped=2)
    run.stdout.fnmatch_lines(["*no-such-program-anywhere is missing: apt install no-such-program*"])
    run.stdout.fnmatch_lines(["*a toy toolkit is missing: pip install toy*"])


def test_a_tests_tier_is_its_folder(pytester, monkeypatch):
    _suite(pytester, monkeypatch)
    for tier, name in (("unit", "test_quick"), ("build", "test_slow"), ("fleet", "test_far")):
        pytester.mkdir(tier)
        (pytester.path / tier / f"{name}.py").write_text("def test_it():\n    pass\n")
    for selection in (["-m", "build"], ["build"]):
        run = _run(pytester, "-v", *selection)
        run.assert_outcomes(passed=1)
        run.stdout.fnmatch_lines(["build/test_slow.py::test_it PASSED*"])
    _run(pytester, "-m", "unit or fleet").assert_outcomes(passed=2)


@pytest.mark.parametrize("place", ["test_loose.py", os.path.join("helpers", "test_nested.py")])
def test_a_test_file_outside_every_tier_folder_stops_the_run_before_it_is_imported(pytester, monkeypatch, place):
    _suite(pytester, monkeypatch)
    pytester.mkdir("unit")
    (pytester.path / "unit" / "test_fine.py").write_text("def test_it():\n    pass\n")
    (pytester.path / "helpers").mkdir()
    (pytester.path / place).write_text("raise SystemExit('the module ran')\n")
    run = _run(pytester)
    text = str(run.stdout) + str(run.stderr)
    assert run.ret == pytest.ExitCode.INTERRUPTED and "the module ran" not in text, text
    assert re.search(rf"{re.escape(place)} is in no tier: move it into the tier folder it belongs to, one of "
                     rf"unit, build, identity, robustness, service, fleet, gpu", text), text


def test_the_tiers_are_the_folders_the_markers_and_the_steps_of_dev_test():
    folders = {name for name in os.listdir(TESTS) if os.path.isdir(os.path.join(TESTS, name))
               and any(file.startswith("test_") for file in os.listdir(os.path.join(TESTS, name)))}
    assert folders == set(tier_rules.TIERS)
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        markers = tomllib.load(handle)["tool"]["pytest"]["ini_options"]["markers"]
    assert tuple(line.split(":")[0] for line in markers if not line.startswith("needs(")) == tier_rules.TIERS
    with open(os.path.join(ROOT, "dev"), encoding="utf-8") as handle:
        steps = re.search(r'^\s*tiers="([^"]*)"', handle.read(), re.M).group(1).split()
    assert tuple(steps) == tier_rules.TIERS


def test_no_test_file_is_outside_a_tier_folder():
    loose = [name for name in os.listdir(TESTS) if name.startswith("test_") and name.endswith(".py")]
    assert loose == [], f"move them into a tier folder: {loose}"
