"""The suite's own rules: a tool this machine lacks skips the tests that need it, with what installs it, except
under `./dev test` (MLIRGPU_TEST_REQUIRE_ALL=1, as CI runs), which installs everything and so fails them."""
import os
import re
import subprocess
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the shared helpers (needs.py)
PROBE = f"""\
import sys
sys.path.insert(0, {TESTS!r})
import pytest
from needs import missing

@pytest.mark.needs("no-such-program-anywhere", "apt install no-such-program")
def test_marked():
    pass

def test_fixture_style():
    missing("a toy toolkit", "pip install toy")
"""


@pytest.mark.parametrize("required", [False, True])
def test_a_missing_tool_skips_with_its_fix_unless_everything_is_required(tmp_path, required):
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {TESTS!r})\nfrom needs import check_marks\n"
                                          "def pytest_runtest_setup(item):\n    check_marks(item)\n"
                                          "def pytest_configure(config):\n"
                                          "    config.addinivalue_line('markers', 'needs(program, install)')\n")
    env = dict(os.environ, MLIRGPU_TEST_REQUIRE_ALL="1" if required else "")
    run = subprocess.run([sys.executable, "-m", "pytest", "-rsf", "-vv", "-p", "no:cacheprovider", "-p", "no:xdist",
                          str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, env=env)
    if required:
        assert run.returncode == 1 and re.search(r"\b1 failed, 1 error\b", run.stdout), run.stdout  # a mark: set-up
    else:
        assert run.returncode == 0 and re.search(r"\b2 skipped\b", run.stdout), run.stdout
    assert "no-such-program-anywhere is missing: apt install no-such-program" in run.stdout
    assert "a toy toolkit is missing: pip install toy" in run.stdout
