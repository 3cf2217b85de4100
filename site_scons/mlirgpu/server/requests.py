"""A request to the compile server (mlirgpu.server.service) as it arrives, checked before the server acts on it:
one message on its socket, at most rendezvous.MAX_REQUEST bytes of JSON of an object, from a client that sees
the files the server sees; a `run` request carries the client's stdin, stdout and stderr (SCM_RIGHTS) and what
a runner (mlirgpu.server.runner) reads, of the types it reads. Also how the server answers: one JSON message."""
import contextlib
import json
import os
import socket as _socket

from ..execution import rendezvous
from ..llvm import process


def reply(connection, value):
    """Send `value` as one JSON message; a client that went away is not told."""
    with contextlib.suppress(OSError):
        connection.send(json.dumps(value).encode("utf-8"))


def receive(connection):
    """The request waiting on `connection`: its bytes, the descriptors it carries (which close on exec: no tool
    the server starts may hold a client's streams open) and whether it came whole; None if none came."""
    connection.settimeout(10)
    try:
        data, ancillary, flags, _address = connection.recvmsg(rendezvous.MAX_REQUEST, _socket.CMSG_SPACE(3 * 4),
                                                              _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None
    return data, process.passed_fds(ancillary), not flags & (_socket.MSG_TRUNC | _socket.MSG_CTRUNC)


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


def view(pid="self"):
    """What process `pid` sees of the files (its mount namespace and root, through /proc), or None if that
    cannot be told: a request runs here only for a client that sees what the server sees."""
    try:
        return tuple((info.st_dev, info.st_ino) for info in (os.stat(f"/proc/{pid}/ns/mnt"),
                                                              os.stat(f"/proc/{pid}/root")))
    except OSError:
        return None


def elsewhere(kind, seen):
    """The answer to a client that sees other files than the server (`seen`: whether the server can tell)."""
    return {"kind": "none" if kind == "tool" else "elsewhere", "message":
            "this process sees other files than the compile server (another mount namespace or root)" if seen
            else "the compile server cannot tell which files a client sees (no /proc)"}


def run_problem(request, fds):
    """What is wrong with a `run` request and the descriptors it carries, or None."""
    if len(fds) != 3:
        return "a run request carries stdin, stdout, stderr"
    if not well_formed(request):
        return "not a request"
    if not process.well_formed_limits(request.get("limits")):
        # A native launcher built before limits were sent: told so, it becomes the Python client.
        return "a run request carries the client's limits"
    return None


def well_formed(request, run=True):
    """Whether a `run` request (with run=False: a `tool` request, which names a program) has what its reader
    reads, of the types it reads."""
    argv, folder, environment, umask = (request.get(key) for key in ("argv", "cwd", "env", "umask"))
    return (isinstance(argv, list) and all(isinstance(word, str) for word in argv) and isinstance(folder, str)
            and isinstance(environment, dict) and all(isinstance(value, str) for value in environment.values())
            and (type(umask) is int and 0 <= umask <= 0o777 if run else bool(argv)))
