"""The suite's tiers are its folders: tests/unit, tests/build, ... Each test takes its tier's marker from its
folder (so `pytest tests/unit` and `pytest -m unit` select the same tests), and a test file outside a tier
folder is an error before it is even imported, so no test falls out of every tier. tests/conftest.py applies
these rules; tests/unit/test_tiers.py checks them on a suite of its own. The shared helpers stay in tests/."""
import os

import pytest

# In the order CI runs them (./dev test): the quick tier first, the GPU last (it skips without one).
TIERS = ("unit", "build", "identity", "robustness", "service", "fleet", "gpu")


def tier_of(path, tests):
    """The tier of the file at `path` in the suite folder `tests`: the tier folder it lies in, else None."""
    parts = os.path.relpath(path, tests).split(os.sep)
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def refuse_misplaced(path, tests):
    """A test file in `tests` but in no tier folder stops the run, saying where it belongs."""
    name = os.path.basename(path)
    inside = not os.path.relpath(path, tests).startswith(os.pardir + os.sep)
    if inside and name.startswith("test_") and name.endswith(".py") and tier_of(path, tests) is None:
        raise pytest.UsageError(f"{os.path.relpath(path, os.path.dirname(tests))} is in no tier: move it into the "
                                f"tier folder it belongs to, one of {', '.join(TIERS)} (tests/<tier>/{name}; "
                                "docs/design.md, Tests)")


def mark(items, tests):
    """Each collected test gets its tier's marker."""
    for item in items:
        tier = tier_of(str(item.path), tests)
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
