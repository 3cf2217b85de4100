"""Where the compile server of this installation listens, whether a server may serve this client, and how to
reach, start and stop it: what the thin client (mlirgpu.server.client), the server (mlirgpu.server.service), the
command line (`mlirgpu server ...`) and the SCons tool's workers agree on. It imports nothing heavy, since every
`mlirgpu compile` runs it before anything else.

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
import _json  # json's C half: the `json` package costs a client 6 ms of imports (re) for two short messages
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
MAX_REQUEST = 1 << 20  # the largest request a server takes (bytes of JSON)
# A message of a Unix socket is bounded by its send buffer (about 200 KiB), a request's environment is not: a
# request larger than INLINE_REQUEST travels in a memfd passed after its descriptors, named by a short message
# that starts with ATTACHED (its size, then the request's kind and fingerprint, which a server of another
# version reads: it is replaced, as for any request).
INLINE_REQUEST = 1 << 16
ATTACHED = b'{"attached": '


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


def receive(connection):
    """The server's next message (JSON); ConnectionError when it closed the connection."""
    return receive_passing(connection)[0]


def receive_passing(connection):
    """The server's next message (JSON) and the descriptors it carries (none but a `started` one's: the
    socket of the runner that takes the client's streams, mlirgpu.server.client)."""
    data, ancillary, _flags, _address = connection.recvmsg(1 << 16, _socket.CMSG_SPACE(4), _socket.MSG_CMSG_CLOEXEC)
    fds = [fd for level, kind, payload in ancillary if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
           for fd in struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4])]
    if not data:
        for fd in fds:
            os.close(fd)
        raise ConnectionError("the server closed the connection")
    try:
        return decode(data), fds
    except ValueError:
        for fd in fds:
            os.close(fd)
        raise


def encode(value):
    """JSON of a message (dicts, lists, strings, numbers, booleans, None), as `json.dumps` writes it."""
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value).encode("ascii")
    if value is None:
        return b"null"
    if isinstance(value, bool):
        return b"true" if value else b"false"
    if isinstance(value, (int, float)) and value - value == 0:  # finite: JSON has no NaN or infinity
        return repr(value).encode("ascii")
    if isinstance(value, dict):
        return b"{" + b", ".join(encode(str(key)) + b": " + encode(item) for key, item in value.items()) + b"}"
    if isinstance(value, (list, tuple)):
        return b"[" + b", ".join(encode(item) for item in value) + b"]"
    raise TypeError(f"cannot send a {type(value).__name__}")


class _Decoding:
    """What json's C scanner reads of a decoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float


_scan = _json.make_scanner(_Decoding())


def decode(data):
    """The value of one JSON message; ValueError if it is not one."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        value, end = _scan(text, len(text) - len(text.lstrip()))
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip():
        raise ValueError("not JSON: extra data")
    return value


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


def request(connection, message, fds=()):
    """Send `message` (JSON) with file descriptors `fds`."""
    data = encode(message)
    if len(data) > MAX_REQUEST:
        raise ValueError("the request is larger than a server takes")
    send(connection, data, fds, {key: message[key] for key in ("kind", "fingerprint") if key in message})


def send(connection, data, fds=(), header=None):
    """Send the JSON `data` with the descriptors `fds`: as one message, or beyond INLINE_REQUEST bytes as an
    ATTACHED message (with `header`'s items) and `data` in a memfd passed after `fds` (`unpack` reads it)."""
    attached = None
    try:
        if len(data) > INLINE_REQUEST:
            attached = os.memfd_create("mlirgpu-request", os.MFD_CLOEXEC)
            view = memoryview(data)
            while view:
                view = view[os.write(attached, view):]
            data = encode({"attached": len(data), **(header or {})})
            fds = (*fds, attached)
        ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []
        connection.sendmsg([data], ancillary)
    finally:
        if attached is not None:
            os.close(attached)


def unpack(data, fds):
    """(JSON, descriptors) of a message `send` sent with `data` and `fds`: an ATTACHED one's JSON is read from its
    memfd (the last descriptor, closed here); ValueError if that is no file of the size it names, up to
    MAX_REQUEST."""
    if not data.startswith(ATTACHED):
        return data, fds
    if not fds:
        raise ValueError("an attached request without its file")
    body, fds = fds[-1], fds[:-1]
    try:
        size = decode(data).get("attached")
        info = os.fstat(body)
        if type(size) is not int or not 0 <= size <= MAX_REQUEST or not stat.S_ISREG(info.st_mode) \
                or info.st_size != size:
            raise ValueError("an attached request of another size")
        data = os.pread(body, size, 0)
        if len(data) != size:
            raise ValueError("an attached request of another size")
    finally:
        os.close(body)
    return data, fds


def server_command(action):
    """`mlirgpu server start|stop|status`."""
    try:
        directory = folder()
    except Unavailable as exc:
        sys.stderr.write(f"mlirgpu: error: {exc} (fix: set MLIRGPU_SERVER_DIR to a private folder)\n")
        return 1
    path = socket_path(directory)
    connection = connect(path)
    if action == "start":
        connection = connection or start_server(directory)
        if connection is None:
            sys.stderr.write(f"mlirgpu: error: the compile server did not start (see {directory}/server.log)\n")
            return 1
    if connection is None:
        print(f"no compile server for this installation ({path})")
        return 0 if action == "stop" else 3
    try:
        request(connection, {"kind": "stop" if action == "stop" else "status"})
        reply = receive(connection)
    finally:
        connection.close()
    if action == "stop":
        print(f"stopped the compile server (pid {reply.get('pid')})")
        return 0
    if reply.get("fingerprint") != fingerprint():
        print("the compile server is of another version of this installation (the next compile replaces it)")
    served = reply.get("served", {})
    print(f"compile server pid {reply['pid']}, up {time.time() - reply['started']:.0f} s, socket {path}\n"
          f"served {served.get('run', 0)} commands (in {served.get('runners', 0)} runners) and "
          f"{served.get('zygote', 0)} builds' workers; "
          f"refused {served.get('refused', 0)}; handed over {served.get('tool', 0)} tool runs "
          f"(loaded: {', '.join(reply.get('tools') or ['none'])}); log {reply.get('log')}"
          + (f"\nloaded for commands: {', '.join(reply['warm'])}" if reply.get("warm") else ""))
    return 0
