"""The compile server's protocol: every message that crosses the server's socket, a runner's channel and a
command's streams socket, named in MESSAGES (kind, fields, which end sends it, where it travels), each message's
writing function beside its reading one, and the one codec they are written in (JSON as `json.dumps` writes it,
one message per SOCK_SEQPACKET packet, a larger request in a memfd).

The ends: the Python client (mlirgpu.server.client) and the native launcher (launcher.c, which writes `run` and
reads `started` and `exit` by the strings tests/unit/test_server_protocol.py checks against this module), the
server (mlirgpu.server.service, requests, runner_pool, tools), a runner (mlirgpu.server.runner), and the
processes below the server that ask it for something: a build's zygote (mlirgpu.execution.processes), a tool
run (mlirgpu.execution.served_tools), `mlirgpu server start|stop|status` (mlirgpu.frontends.server_command).
Those are in execution/ and frontends/, which may not import server/ (the layers, pyproject.toml), so the
protocol lives here, in the highest layer every end may import; where the server is (its folder, socket,
fingerprint) is mlirgpu.execution.rendezvous. After a `zygote` answer the connection speaks the worker protocol
(mlirgpu.execution.protocol: fork, wait). docs/design.md's message table is checked against MESSAGES.

A client imports this module before anything else: it imports nothing heavy (json's C half, not `json`).
"""
import _json
import _socket
import os
import stat
import struct

MAX_REQUEST = 1 << 20  # the largest request a server takes (bytes of JSON)
# A message of a Unix socket is bounded by its send buffer (about 200 KiB), a request's environment is not: a
# request larger than INLINE_REQUEST travels in a memfd passed after its descriptors, named by a short `attached`
# message (its size, then the request's kind and fingerprint, which a server of another version reads: it is
# replaced, as for any request).
INLINE_REQUEST = 1 << 16
ATTACHED = b'{"attached": '
ATTACHED_FILE = "mlirgpu-request"  # the memfd's name
MAX_DESCRIPTORS = 4  # the most a request carries (a tool's or an old client's streams, an attached request)
STREAMS = b"streams"  # the client's message to its runner, carrying its stdin, stdout and stderr
LIMITS = ("FSIZE", "NOFILE", "CORE", "AS", "DATA", "CPU")  # mlirgpu.llvm.process.LIMITS (that import costs 25 ms)
CARD = "mlirgpu-card 1"  # the first line of the server's card (card_text), which launcher.c reads



class Message:
    """A message: its `name` (the value of its "kind" field, for one that has that field), who sends it to whom,
    on which `channel`, its JSON `fields` (a "?" after an optional one) and the `descriptors` it carries
    (SCM_RIGHTS). A plain class: `collections.namedtuple` would cost every client 3 ms of imports."""

    __slots__ = ("name", "sender", "receiver", "channel", "fields", "descriptors")

    def __init__(self, name, sender, receiver, channel, fields, descriptors):
        self.name, self.sender, self.receiver, self.channel = name, sender, receiver, channel
        self.fields, self.descriptors = fields, descriptors


_SERVER_SOCKET = "server socket"
MESSAGES = (
    Message("run", "client, launcher.c", "server, then runner", _SERVER_SOCKET,
            ("kind", "fingerprint", "argv", "cwd", "env", "umask", "limits"), ""),
    Message("zygote", "build tool", "server", _SERVER_SOCKET, ("kind", "fingerprint"), ""),
    Message("tool", "command", "server", _SERVER_SOCKET, ("kind", "argv", "cwd", "env"), ""),
    Message("status", "server command, server", "server", _SERVER_SOCKET, ("kind",), ""),
    Message("stop", "server command", "server", _SERVER_SOCKET, ("kind",), ""),
    Message("attached", "client, launcher.c", "server", _SERVER_SOCKET, ("attached", "kind?", "fingerprint?"),
            "the request's memfd, last"),
    Message("started", "server", "client, launcher.c", _SERVER_SOCKET, ("kind", "pid"), "the runner's streams socket"),
    Message("exit", "runner, server", "client, launcher.c", _SERVER_SOCKET, ("kind", "code", "signal?"), ""),
    Message("zygote", "server", "build tool", _SERVER_SOCKET, ("kind", "pid", "log"), ""),
    Message("tool", "server", "command", _SERVER_SOCKET, ("kind", "pid"), "the run's 4 pipe ends"),
    Message("none", "server", "command", _SERVER_SOCKET, ("kind", "message?"), ""),
    Message("status", "server", "server command", _SERVER_SOCKET,
            ("kind", "pid", "fingerprint", "started", "served", "log", "warm", "tools"), ""),
    Message("stopped", "server", "server command", _SERVER_SOCKET, ("kind", "pid"), ""),
    Message("replaced", "server", "client, build tool", _SERVER_SOCKET, ("kind",), ""),
    Message("elsewhere", "server", "client, build tool", _SERVER_SOCKET, ("kind", "message"), ""),
    Message("error", "server", "any", _SERVER_SOCKET, ("kind", "message"), ""),
    Message("handed run", "server", "runner", "runner channel", ("(the run request)",),
            "the runner's streams end, the client's connection"),
    Message("retire", "runner", "server", "runner channel", ("retire",), ""),
    Message("streams", "client, launcher.c", "runner", "streams socket", ("(the bytes `streams`)",),
            "stdin, stdout, stderr"),
)


# The codec: JSON as json.dumps writes it (`, ` and `: `, ASCII), read by json's own C scanner.

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
_BLANKS = " \t\n\r"  # JSON's whitespace, which json.loads skips around a value


def decode(data):
    """The value of one JSON message (UTF-8); ValueError if it is not one, RecursionError if it is nested beyond
    the interpreter's recursion limit (never a crash)."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    try:
        value, end = _scan(text, len(text) - len(text.lstrip(_BLANKS)))
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip(_BLANKS):
        raise ValueError("not JSON: extra data")
    return value


def passed_fds(ancillary):
    """The file descriptors an SCM_RIGHTS message carried (of a server's message, and of a zygote's: the worker
    protocol, mlirgpu.execution.protocol, reads its descriptors here too)."""
    return [fd for level, kind, payload in ancillary if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
            for fd in struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4])]


def _rights(fds):
    return [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))] if fds else []


# Requests: a client's end and the server's.

def run_request(fingerprint, argv, cwd, env, umask, limits):
    """The client: `mlirgpu <argv>` as it would run here (`limits`: {name of LIMITS: [soft, hard]})."""
    return {"kind": "run", "fingerprint": fingerprint, "argv": argv, "cwd": cwd, "env": env, "umask": umask,
            "limits": limits}


def zygote_request(fingerprint):
    """A build tool: a zygote of the server's, forking its workers (answered `zygote`)."""
    return {"kind": "zygote", "fingerprint": fingerprint}


def tool_request(argv, cwd, env):
    """A command: a started run of the loaded tool `argv[0]` (answered `tool` or `none`)."""
    return {"kind": "tool", "argv": list(argv), "cwd": cwd, "env": env}


def plain_request(kind):
    """`status` or `stop`."""
    return {"kind": kind}


def request(connection, message, fds=()):
    """The client: send the request `message` with file descriptors `fds`; ValueError if it is larger than a
    server takes."""
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
            attached = os.memfd_create(ATTACHED_FILE, os.MFD_CLOEXEC)
            view = memoryview(data)
            while view:
                view = view[os.write(attached, view):]
            data = encode({"attached": len(data), **(header or {})})
            fds = (*fds, attached)
        connection.sendmsg([data], _rights(fds))
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


def receive_request(connection):
    """The server: the request waiting on `connection` as (its bytes, the descriptors it carries, which close on
    exec: no tool the server starts may hold a client's streams open, and what is wrong with it: too large, or
    an attached request that cannot be read; else None); None if none came."""
    connection.settimeout(10)
    try:
        data, ancillary, flags, _address = connection.recvmsg(
            MAX_REQUEST, _socket.CMSG_SPACE(MAX_DESCRIPTORS * 4), _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None
    fds = passed_fds(ancillary)
    if flags & _socket.MSG_CTRUNC:
        return data, fds, "too many descriptors"
    if flags & _socket.MSG_TRUNC:
        return data, fds, "request too large"
    try:
        data, fds = unpack(data, fds)
    except (OSError, ValueError, AttributeError, RecursionError):
        return data, fds[:-1], "the attached request cannot be read"
    return data, fds, None


def parse_request(data):
    """The server: the request in `data` (JSON of an object), or ValueError. Its size is bounded by the socket's
    message (MAX_REQUEST), its nesting by the scanner, which stops at the interpreter's recursion limit: a
    request nested deeper than any real one is answered with an error."""
    try:
        parsed = decode(data)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(parsed, dict):
        raise ValueError("not an object")
    return parsed


def well_formed(message, run=True):
    """The server: whether a `run` request (with run=False: a `tool` request, which names a program) has what
    its reader reads, of the types it reads, as text a process can take (no NUL; variables named without `=`)."""
    argv, folder, environment, umask = (message.get(key) for key in ("argv", "cwd", "env", "umask"))
    return (isinstance(argv, list) and all(_text(word) for word in argv) and _text(folder)
            and isinstance(environment, dict)
            and all(_text(name) and name and "=" not in name and _text(value) for name, value in environment.items())
            and (type(umask) is int and 0 <= umask <= 0o777 if run else bool(argv)))


def _text(value):
    return isinstance(value, str) and "\0" not in value


# Answers: the server's (or a runner's) end and the client's.

def reply(connection, value, fd=None):
    """Send the answer `value` as one message (with the descriptor `fd`); a client that went away is not told."""
    try:
        connection.sendmsg([encode(value)], _rights([fd] if fd is not None else []))
    except OSError:
        pass


def error(message):
    """A request the server cannot serve (malformed, unknown, of another layout): the server serves on."""
    return {"kind": "error", "message": message}


def replaced():
    """A `run` or `zygote` request of another fingerprint (or a `run` of higher limits): the server ends, and
    the client starts a server of its own."""
    return {"kind": "replaced"}


def started(pid):
    """A `run` request taken by the runner `pid` (the answer carries the socket the client's streams go to)."""
    return {"kind": "started", "pid": pid}


def zygote_answer(pid, log):
    """A `zygote` request served by the zygote `pid`, its workers' LLVM log at `log`."""
    return {"kind": "zygote", "pid": pid, "log": log}


def no_tool():
    """A `tool` request without a run to hand over: the command starts the tool itself."""
    return {"kind": "none"}


def status_answer(pid, fingerprint, started_at, served, log, warm, tools):
    """The server's pid, fingerprint, start time, what it served, its log, which WARM_IMPORTS it holds and the
    tools it keeps loaded."""
    return {"kind": "status", "pid": pid, "fingerprint": fingerprint, "started": started_at, "served": served,
            "log": log, "warm": warm, "tools": tools}


def stopped(pid):
    return {"kind": "stopped", "pid": pid}


def elsewhere(kind, seen):
    """The answer to a client that sees other files than the server (`seen`: whether the server can tell)."""
    return {"kind": "none" if kind == "tool" else "elsewhere", "message":
            "this process sees other files than the compile server (another mount namespace or root)" if seen
            else "the compile server cannot tell which files a client sees (no /proc)"}


def exit_answer(code, signal=None):
    """A command's end: its exit code; `signal`: the one that killed its runner (a bug of ours)."""
    return {"kind": "exit", "code": code, **({"signal": signal} if signal else {})}


def receive(connection):
    """The client: the server's next message; ConnectionError when it closed the connection."""
    return receive_passing(connection)[0]


def receive_passing(connection, descriptors=1):
    """The client: the server's next message and the descriptors it carries (up to `descriptors`: a `started`
    one's socket of the runner that takes the client's streams, a `tool` one's four pipe ends)."""
    data, ancillary, _flags, _address = connection.recvmsg(
        1 << 16, _socket.CMSG_SPACE(descriptors * 4), _socket.MSG_CMSG_CLOEXEC)
    fds = passed_fds(ancillary)
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


# Between a client and its runner, and the server and its runners.

def send_streams(fd):
    """The client: pass this process's stdin, stdout and stderr to the runner that took the command, on its
    socket `fd` (the `started` answer's)."""
    runner = _socket.socket(fileno=os.dup(fd))
    try:
        runner.sendmsg([STREAMS], _rights([0, 1, 2]))
    finally:
        runner.close()


def receive_streams(fd):
    """The runner: the client's stdin, stdout and stderr, passed on the socket `fd` (closed here); None if it went
    away first."""
    streams_socket = _socket.socket(fileno=fd)
    try:
        _data, ancillary, _flags, _address = streams_socket.recvmsg(16, _socket.CMSG_SPACE(3 * 4),
                                                                    _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None
    finally:
        streams_socket.close()
    fds = passed_fds(ancillary)
    if len(fds) == 3:
        return fds
    for passed in fds:
        os.close(passed)
    return None


def hand_to_runner(channel, data, runners_end, client):
    """The server: a `run` request (`data`, as the client sent it) for the runner on `channel`, with the runner's
    end of the command's streams socket and the client's connection (descriptors)."""
    send(channel, data, [runners_end, client])


def receive_handed(channel):
    """The runner: (the request, [its streams end, the client's connection]) the server handed over; None when
    the server closed the channel (it is ending, or has runners enough) or sent anything else."""
    try:
        data, ancillary, _flags, _address = channel.recvmsg(MAX_REQUEST, _socket.CMSG_SPACE(3 * 4),
                                                            _socket.MSG_CMSG_CLOEXEC)
        data, fds = unpack(data, passed_fds(ancillary))
    except (OSError, ValueError):
        return None
    if not data or len(fds) != 2:
        return None
    return decode(data), fds


def send_retire(channel, retire):
    """The runner: its command ended (it answered the client), and whether it ends now."""
    channel.send(encode({"retire": retire}))


def receive_retire(channel):
    """The server: a runner's word, whether it retires; None when it ended without one."""
    try:
        data = channel.recv(1 << 12)
        return bool(decode(data)["retire"]) if data else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def send_tool_run(connection, pid, fds):
    """The server: the run `pid` of a loaded tool, its four pipe ends (the command's answer `tool`)."""
    connection.sendmsg([encode({"kind": "tool", "pid": pid})], _rights(fds))


def card_text(fingerprint, folders, library):
    """The server's card, which launcher.c reads before every request (mlirgpu.server.launcher.write_card): the
    fingerprint, and the files it is made of by name, size and time (`folders`: {folder: [(name, size,
    mtime_ns)]}; `library`: llvmlite's as (path, size, mtime_ns), or None)."""
    lines = [CARD, f"F {fingerprint}"]
    for folder, files in folders.items():
        lines.append(f"D {folder}")
        lines += [f"P {size} {mtime} {name}" for name, size, mtime in files]
    lines.append(f"L {library[1]} {library[2]} {library[0]}" if library else "L none")
    return "\n".join(lines) + "\n"
