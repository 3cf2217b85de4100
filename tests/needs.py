"""What a test needs that a machine may lack. `./dev test` (and so CI) installs every tool the tests use and sets
MLIRGPU_TEST_REQUIRE_ALL=1: there a missing one fails the tests that need it, saying what installs it. A
developer's own `pytest` on a machine without one skips those tests with the same words, so the rest still runs.
Hardware (a GPU) and privileges (root, namespaces) are never installable: those tests always just skip."""
import os
import shutil

import pytest



def required_all():
    """Whether this run installed every tool (MLIRGPU_TEST_REQUIRE_ALL), read when a test asks."""
    return os.environ.get("MLIRGPU_TEST_REQUIRE_ALL", "") not in ("", "0")


def have(program):
    return shutil.which(program) is not None


def missing(what, install):
    """Stop this test: `what` is not on this machine and `install` installs it."""
    message = f"{what} is missing: {install}"
    if required_all():
        pytest.fail(message)
    pytest.skip(message)


def check_marks(item):
    """`@pytest.mark.needs(program, install)` on a test or module: the program must be on PATH."""
    for mark in item.iter_markers("needs"):
        if not have(mark.args[0]):
            missing(mark.args[0], mark.args[1])
