"""A request to the compile server (mlirgpu.server.service), checked before the server acts on it: beyond what
mlirgpu.execution.server_protocol reads (one message of at most MAX_REQUEST bytes of JSON of an object, its
fields of the types their reader reads), it comes from a client that sees the files the server sees, and a
`run` request carries no descriptor (the client's streams go to the runner alone, on the socket the `started`
answer carries)."""
import os

from ..execution import server_protocol


def sees_these_files(pid):
    """Whether process `pid` sees the files this process sees, told by the files, not by namespaces or pids: the
    same root, and the same mount namespace or one with the same mounts (each one's device, root, place and
    options, in order) but for /proc (`unshare --pid --fork --mount-proc` mounts a /proc of its own, and nothing
    else). None if this process cannot tell (no /proc); False for a process it cannot see."""
    own = _namespace_and_root("self")
    if own is None:
        return None
    theirs = _namespace_and_root(pid)
    if theirs is None or theirs[1] != own[1]:
        return False
    return theirs == own or _mounts(pid) == _mounts("self") is not None


def _namespace_and_root(pid):
    try:
        return tuple((info.st_dev, info.st_ino) for info in (os.stat(f"/proc/{pid}/ns/mnt"),
                                                              os.stat(f"/proc/{pid}/root")))
    except OSError:
        return None


def _mounts(pid):
    """The mounts process `pid` sees (/proc/PID/mountinfo without the mounts' ids, which a copied namespace
    numbers anew, and their propagation, which it makes private), but /proc and those below it, by place (a
    copied namespace lists them in another order; mounts stacked on one place stay in theirs); None if unread."""
    try:
        with open(f"/proc/{pid}/mountinfo", "rb") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    mounts = []
    for line in lines:
        fields = line.split(b" ")
        if len(fields) < 10 or b"-" not in fields[6:]:
            return None
        place = fields[4]
        if place == b"/proc" or place.startswith(b"/proc/"):
            continue
        separator = fields.index(b"-", 6)
        mounts.append((place, *fields[2:4], fields[5], *fields[separator + 1:]))
    return sorted(mounts, key=lambda mount: mount[0])


def run_problem(request, fds):
    """What is wrong with a `run` request of this version and the descriptors it carries, or None."""
    if fds:
        # A native launcher built before the streams went to the runner: told so, it becomes the Python client.
        return "a run request carries no descriptors (the streams go to the runner)"
    if not server_protocol.well_formed(request):
        return "not a request"
    return None
