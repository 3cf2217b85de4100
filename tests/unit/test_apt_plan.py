"""The set-up's decisions (tools/apt_plan.py), on recorded apt output of Debian 12 (with and without its
security suite) and Debian 13: only a package no configured suite has needs another suite, and a simulation
that upgrades or removes an installed package is a change. The script itself: tests/build/test_bootstrap_script.py."""
import os
import sys

import pytest

from corpusutil import ROOT

sys.path.insert(0, os.path.join(ROOT, "tools"))
import apt_plan  # noqa: E402

RECORDED = os.path.join(ROOT, "tests", "data", "apt")
LLVM = ["mlir-22-tools", "llvm-22", "lld-22"]


def recorded(name):
    with open(os.path.join(RECORDED, name), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("policy,nowhere", [
    ("bookworm-security.policy.txt", []),  # Debian 12 with its security suite has MLIR 22
    ("trixie.policy.txt", []),  # Debian 13's own suite has it
    ("bookworm-no-security.policy.txt", LLVM),  # Debian 12 without it: only those three need another suite
])
def test_only_packages_no_configured_suite_has_need_another_suite(policy, nowhere):
    assert apt_plan.nowhere(recorded(policy), LLVM + ["rocm-device-libs"]) == nowhere


def test_a_package_with_no_candidate_needs_another_suite():
    assert apt_plan.nowhere(recorded("bookworm-no-security.policy.txt"), ["chromium"]) == ["chromium"]


def test_new_packages_are_no_change_upgrades_and_removals_are():
    assert apt_plan.changes(recorded("bookworm.install-new.sim.txt")) == []
    found = apt_plan.changes(recorded("bookworm-with-trixie.upgrade.sim.txt"))
    assert [line.split()[:2] for line in found] == [["Inst", "libc6"], ["Inst", "libstdc++6"],
                                                    ["Remv", "libgcc-12-dev"]]
