"""The unit tier: every test here runs with the process guard on (tests/process_guard.py)."""
import pytest

import process_guard


@pytest.fixture(autouse=True)
def no_processes(monkeypatch):
    process_guard.install(monkeypatch)
