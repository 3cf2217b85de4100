"""Where the compile server of this installation is, whether a server may serve this client, and how to reach and
start it: its folder and the files there (its socket, log and lock), its fingerprint, the connection to it. What
the thin client (mlirgpu.server.client), the server (mlirgpu.server.service), the command line (`mlirgpu server
...`) and the SCons tool's workers agree on; what they say to each other is mlirgpu.execution.server_protocol.
It imports nothing heavy, since every `mlirgpu compile` runs it before anything else.

    MLIRGPU_SERVER=off           compile in the calling process, as without a server
    MLIRGPU_SERVER_DIR           the server's folder (default $XDG_RUNTIME_DIR/mlirgpu, else /tmp/mlirgpu-<uid>)
    MLIRGPU_SERVER_IDLE=600      seconds a server waits for a request before it exits
    MLIRGPU_SERVER_TIMEOUT=10    seconds a client waits for a server to start or to take its request

The folder must be the user's own and closed to others (mode 700); a server's socket there is named after the
installation (the package's folder and the Python running it), so two checkouts of the project each get their
own server. The installation's contents (this package's files in every subpackage, its version, llvmlite's
library: mlirgpu.version) make the `fingerprint` a client sends with each request: a server with another
fingerprint stops, and the client starts a current one.
"""
import _socket
import errno
import os
import stat
import struct
import sys
import time
import zlib

from ..util import environment
from ..version import PACKAGE as _PACKAGE, __version__, code_files, llvmlite_library

PACKAGE = os.path.realpath(_PACKAGE)  # one name, whichever link SCons loaded it through
MAX_TIMEOUT = 86400.0


class Unavailable(Exception):
    """No server may be used (the folder is not private, or cannot be made)."""


def wanted():
    """False when `$MLIRGPU_SERVER` turns the server off (a boolean: mlirgpu.util.environment)."""
    return environment.value("MLIRGPU_SERVER")


def idle_seconds():
    """Seconds a server waits for a request before it exits (`$MLIRGPU_SERVER_IDLE`, at least 1)."""
    return max(1.0, environment.value("MLIRGPU_SERVER_IDLE"))


def folder():
    """The server folder, made if missing; Unavailable unless it is a directory of this user that no one else
    may enter (a socket there is then reachable by this user only)."""
    path = environment.value("MLIRGPU_SERVER_DIR") or (
        os.path.join(os.environ["XDG_RUNTIME_DIR"], "mlirgpu") if os.environ.get("XDG_RUNTIME_DIR")
        else os.path.join("/tmp", f"mlirgpu-{os.getuid()}"))
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise Unavailable(f"cannot make {path}: {exc.strerror}") from None
    check_folder(path)
    return path


def check_folder(path):
    """Unavailable unless `path` itself (not a link to one) is a directory of this user closed to others: what
    the server checks again before it trusts anything there."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise Unavailable(f"cannot use {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise Unavailable(f"{path} is not a folder of this user closed to others (mode 700)")


def own_file(path, flags):
    """A descriptor of the file `path` in the (checked) server folder, opened with `flags` (O_CREAT makes it,
    mode 600) without following a link, and only if it is a plain file of this user's, with no other name, that
    no one else may write. Anything else there (a link, another user's file, planted while the folder was open)
    is removed and the file made anew: nothing the server did not make is written or loaded."""
    flags |= os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # O_NONBLOCK: a planted FIFO does not block the open
    for _attempt in range(3):
        try:
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO) or not flags & os.O_CREAT:
                raise
        else:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_nlink == 1 \
                    and not info.st_mode & 0o022:
                os.set_blocking(fd, True)
                return fd
            os.close(fd)
            if not flags & os.O_CREAT:
                raise PermissionError(errno.EPERM, "not a file of this user's alone", path)
        os.unlink(path)  # a planted entry: this user's folder, so it may go
    raise PermissionError(errno.EPERM, "cannot make a file of this user's alone", path)


def installation():
    """This installation's name: the package's folder and the Python running it (the folder of its executable,
    which tells virtual environments apart, and the interpreter whatever link named it; not `sys.prefix`, which a
    server started with `-S` does not set)."""
    executable = os.path.abspath(sys.executable)
    return f"{os.path.dirname(executable)}\0{os.path.realpath(executable)}\0{sys.version}\0{PACKAGE}"


def socket_path(directory):
    return os.path.join(directory, f"server-{zlib.crc32(installation().encode()):08x}.sock")


def fingerprint():
    """What a server must have been started from to serve this client: the version, and the size and time of
    every file of the package and of llvmlite's library (an upgrade or an edit changes it)."""
    return fingerprint_of(fingerprint_inputs())


def fingerprint_inputs():
    """The files the fingerprint is made of: ({folder: [(name, size, mtime_ns)] of its .py files}, llvmlite's
    library as (path, size, mtime_ns) or None)."""
    folders = {folder: [(name, *_size_and_time(os.path.join(folder, name))) for name in names]
               for folder, names in code_files(PACKAGE).items()}
    library = llvmlite_library()
    return folders, (library, *_size_and_time(library)) if library else None


def _size_and_time(path):
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


def fingerprint_of(inputs):
    """The fingerprint made of `inputs` (fingerprint_inputs), which the server's card also holds for the native
    launcher (mlirgpu.server.launcher)."""
    folders, library = inputs
    parts = [__version__, installation()]
    parts += [f"{name}:{size}:{mtime}" for files in folders.values() for name, size, mtime in files]
    parts.append(f"{os.path.basename(library[0])}:{library[1]}:{library[2]}" if library else "no llvmlite")
    return f"{zlib.crc32(chr(1).join(parts).encode()):08x}"


def timeout():
    """Seconds a client waits for a server to start or to take a request (`$MLIRGPU_SERVER_TIMEOUT`, at least
    0.1 and at most a day: `inf` waits a day); a value that is no number of seconds (nan, negative, a word) is
    a CompileError naming it."""
    return min(max(0.1, environment.value("MLIRGPU_SERVER_TIMEOUT")), MAX_TIMEOUT)


def connect(path):
    """A connection to the server listening on `path`, or None. None too where another user's process listens
    there (a socket planted while the folder was open to others): it is sent nothing, no stream above all."""
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    try:
        connection.settimeout(timeout())
        reach(connection.connect, path)
        if peer(connection)[1] == os.getuid():
            return connection
    except OSError:
        pass
    connection.close()
    return None


def peer(connection):
    """(pid, uid) of the process at the other end of a Unix socket (SO_PEERCRED; pid 0: a process in a pid
    namespace this one cannot see)."""
    pid, uid, _gid = struct.unpack("3i", connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12))
    return pid, uid


def reach(operation, path):
    """`operation` (a socket's connect or bind) on the socket file `path`; one longer than a socket address
    holds (108 bytes) is reached through this process's descriptor of its folder (/proc/self/fd), at once."""
    if len(os.fsencode(path)) < 100:
        return operation(path)
    fd = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return operation(f"/proc/self/fd/{fd}/{os.path.basename(path)}")
    finally:
        os.close(fd)


def start_server(directory):
    """Start a server for this installation in the background (it exits at once if another one got there
    first) and wait until one answers; its connection, or None. A bad MLIRGPU_SERVER_IDLE is a CompileError here,
    in the command that would start it, not a server that dies in its log."""
    import subprocess

    idle_seconds()
    path = socket_path(directory)
    root = os.path.dirname(PACKAGE)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys(
        [root] + [os.path.abspath(p) for p in sys.path if p and os.path.exists(p)])))
    try:
        os.close(own_file(os.path.join(directory, "server.log"), os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    except OSError:
        return None  # no log of its own (a planted folder of that name): no server
    server = subprocess.Popen([sys.executable, "-S", "-m", "mlirgpu.server.service", directory],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True, env=environment, cwd="/")
    deadline = time.monotonic() + timeout()
    while time.monotonic() < deadline:
        connection = connect(path)
        if connection is not None:
            return connection
        if server.poll() is not None:  # it ended: another server got there first (and answers now), or it failed
            return connect(path)
        time.sleep(0.01)
    return None
