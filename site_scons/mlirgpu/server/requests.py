"""A request to the compile server (mlirgpu.server.service) as it arrives, checked before the server acts on it:
one message on its socket (or an attached one, mlirgpu.execution.rendezvous.send), at most
rendezvous.MAX_REQUEST bytes of JSON of an object, from a client that sees the files the server sees; a `run`
request carries what a runner (mlirgpu.server.runner) reads, of the types it reads, and no descriptor (the
client's streams go to the runner alone, on the socket the `started` answer carries). Also how the server
answers: one JSON message."""
import contextlib
import json
import os
import socket as _socket
import struct

from ..execution import rendezvous
from ..llvm import process


MAX_DESCRIPTORS = 4  # the most a request carries (a tool's or an old client's streams, an attached request)


def reply(connection, value, fd=None):
    """Send `value` as one JSON message (with the descriptor `fd`); a client that went away is not told."""
    ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("i", fd))] if fd is not None else []
    with contextlib.suppress(OSError):
        connection.sendmsg([json.dumps(value).encode("utf-8")], ancillary)


def receive(connection):
    """The request waiting on `connection`: its bytes, the descriptors it carries (which close on exec: no tool
    the server starts may hold a client's streams open) and what is wrong with it (too large, or an attached
    request that cannot be read), or None; None if none came."""
    connection.settimeout(10)
    try:
        data, ancillary, flags, _address = connection.recvmsg(
            rendezvous.MAX_REQUEST, _socket.CMSG_SPACE(MAX_DESCRIPTORS * 4), _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None
    fds = process.passed_fds(ancillary)
    if flags & _socket.MSG_CTRUNC:
        return data, fds, "too many descriptors"
    if flags & _socket.MSG_TRUNC:
        return data, fds, "request too large"
    try:
        data, fds = rendezvous.unpack(data, fds)
    except (OSError, ValueError, AttributeError, RecursionError):
        return data, fds[:-1], "the attached request cannot be read"
    return data, fds, None


def parse(data):
    """The request in `data` (JSON of an object), or ValueError. Its size is bounded by the socket's message
    (rendezvous.MAX_REQUEST), its nesting by json's parser, which stops at the interpreter's recursion limit
    (RecursionError, never a crash): a request nested deeper than any real one is answered with an error."""
    try:
        request = json.loads(data)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(request, dict):
        raise ValueError("not an object")
    return request


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


def elsewhere(kind, seen):
    """The answer to a client that sees other files than the server (`seen`: whether the server can tell)."""
    return {"kind": "none" if kind == "tool" else "elsewhere", "message":
            "this process sees other files than the compile server (another mount namespace or root)" if seen
            else "the compile server cannot tell which files a client sees (no /proc)"}


def run_problem(request, fds):
    """What is wrong with a `run` request of this version and the descriptors it carries, or None."""
    if fds:
        # A native launcher built before the streams went to the runner: told so, it becomes the Python client.
        return "a run request carries no descriptors (the streams go to the runner)"
    if not well_formed(request):
        return "not a request"
    return None


def well_formed(request, run=True):
    """Whether a `run` request (with run=False: a `tool` request, which names a program) has what its reader
    reads, of the types it reads, as text a process can take (no NUL; variables named without `=`)."""
    argv, folder, environment, umask = (request.get(key) for key in ("argv", "cwd", "env", "umask"))
    return (isinstance(argv, list) and all(_text(word) for word in argv) and _text(folder)
            and isinstance(environment, dict)
            and all(_text(name) and name and "=" not in name and _text(value) for name, value in environment.items())
            and (type(umask) is int and 0 <= umask <= 0o777 if run else bool(argv)))


def _text(value):
    return isinstance(value, str) and "\0" not in value
