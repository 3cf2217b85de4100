#!/usr/bin/env python3
"""The bootstrap's apt decisions, as plain functions over apt's own output (tested against recorded outputs of
Debian 12 and 13 in tests/unit/test_apt_plan.py). Standard library only: it runs before any venv exists.

  apt-cache policy PKG... | apt_plan.py nowhere PKG...   the packages no configured suite has (one per line)
  apt-get install -s PKG... | apt_plan.py changes        what the install would upgrade, downgrade or remove
                                                          among installed packages (one per line; exit 1 if any)
"""
import re
import sys


def candidates(policy):
    """{package: candidate version or None} from `apt-cache policy` output (a package apt does not know at
    all prints no block: it is absent here)."""
    found, current = {}, None
    for line in policy.splitlines():
        head = re.match(r"^(\S+):$", line)
        if head:
            current = head.group(1)
            found[current] = None
            continue
        candidate = re.match(r"^\s+Candidate:\s+(\S+)", line)
        if candidate and current:
            found[current] = None if candidate.group(1) == "(none)" else candidate.group(1)
    return found


def nowhere(policy, packages):
    """The packages among `packages` that no configured suite offers."""
    offered = candidates(policy)
    return [package for package in packages if not offered.get(package) and not offered.get(package + ":amd64")]


def changes(simulation):
    """Lines of `apt-get install -s` that touch an installed package: an `Inst` with the installed version in
    brackets (an upgrade or downgrade) or a `Remv`. New packages (`Inst name (version ...)`) are not changes."""
    return [line for line in simulation.splitlines() if re.match(r"^(Inst \S+ \[|Remv )", line)]


def main(argv):
    command, names = argv[0], argv[1:]
    text = sys.stdin.read()
    if command == "nowhere":
        print("\n".join(nowhere(text, names)))
        return 0
    if command == "changes":
        found = changes(text)
        print("\n".join(found))
        return 1 if found else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
