"""The worker protocol: every message between a caller, its worker processes and a zygote, each message's sending
function beside its receiving one, so the two ends of a message are read together.

A worker speaks length-prefixed pickles over a pair of pipes. The caller sends a `request` (an entry point of
the pipeline, its arguments, and what the compile runs with: the caller's folder, environment, scratch folder,
umask and resource limits, and whether the caller has the source's translation); the worker answers with
`progress` messages (each step it starts), an `ask` when the compile needs the caller's translation (the
caller sends it back), and one `reply`: the result, the CompileError raised, or a bug of ours. A worker that a
zygote forked first finds its pid, the `hello`, in its pipe to the caller.

A zygote takes requests over a message-preserving Unix socket: `fork` carries the new worker's two pipe ends
and is not answered; `wait` is answered with the worker's exit status.
"""
import _socket  # the C module: `socket` itself costs 11 ms of start-up (caller and zygote) for the same calls
import collections
import os
import pickle
import struct

from ..llvm import process
from ..errors import CompileError
from ..util import fsutil
from .server_protocol import passed_fds

_HEADER = struct.Struct("<Q")


def _send(stream, value):
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)  # not joined to its header: a compile's result is never copied once more to be sent
    stream.flush()


def _receive(stream):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


# A compile for a worker: `entry(*args)` of the pipeline, run as the caller would run it. `translated_ahead`:
# the caller has the source's translation, which the worker asks for if it translates; `scratch`: the folder
# of the compile's temporary files, which the caller owns and removes; `scan`: the caller's scan of the source
# (pipeline.scan.known_scan) or None. (`typing.NamedTuple` would cost the command's start-up the import of
# `typing`.)
Request = collections.namedtuple("Request", "entry args translated_ahead cwd environment scratch umask limits scan")


def send_request(stream, entry, args, translated_ahead, environment, scratch, scan=None):
    """The caller: compile `entry(*args)` in this process's folder, umask and limits, in `environment`."""
    _send(stream, tuple(Request(entry, args, translated_ahead, os.getcwd(), dict(environment), scratch,
                                fsutil.umask(), process.limits(), scan)))


def receive_request(stream):
    """The worker: the next Request, or None when the caller closed the pipe (it is done)."""
    request = _receive(stream)
    return None if request is None else Request(*request)


def send_progress(stream, what, where):
    """The worker: the compile starts step `what` at `where` (file, line), which a crash report names."""
    _send(stream, ("progress", (what, where)))


def ask_caller(to_caller, from_caller):
    """The worker: the caller's translation of the source (see send_answer); raises the error the caller's
    translation met when it answers with one."""
    _send(to_caller, ("ask", None))
    answer = _receive(from_caller)
    if isinstance(answer, CompileError):
        raise answer
    return answer


def send_answer(stream, value):
    """The caller: the answer to an `ask`, always sent (None: the worker translates on its own; a CompileError:
    the worker's compile fails with it)."""
    _send(stream, value)


def send_reply(stream, status, value):
    """The worker: the compile's end. `status` "ok" (value: the result), "compile-error" (the CompileError) or
    "error" (a bug of ours: its exception's name and traceback)."""
    _send(stream, (status, value))


def receive_from_worker(stream):
    """The caller: the worker's next message as (kind, value): kind "hello", "progress", "ask", or a reply's
    status; (None, None) when the worker's pipe closed (it died)."""
    message = _receive(stream)
    return (None, None) if message is None else message


def write_hello(fd, pid):
    """The zygote: the forked worker's pid, the first message in its pipe to the caller (file descriptor `fd`)."""
    data = pickle.dumps(("hello", pid), protocol=pickle.HIGHEST_PROTOCOL)
    os.write(fd, _HEADER.pack(len(data)) + data)


def receive_hello(stream):
    """The caller: a forked worker's pid, or None when its pipe closed before the zygote wrote one."""
    hello = _receive(stream)
    return None if hello is None else hello[1]


def send_fork(control, log_path, to_worker, from_worker):
    """The caller: have the zygote fork a worker reading `to_worker` and writing `from_worker` (file descriptors,
    passed along), with its LLVM log at `log_path`."""
    control.sendmsg([pickle.dumps(("fork", log_path))],
                    [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("2i", to_worker, from_worker))])


def receive_control(control):
    """The zygote: the next request as ("fork", log path, [pipe ends]), ("wait", pid, timeout), or ("?",) for
    anything else (its descriptors closed); None when the caller closed the socket."""
    try:
        data, ancillary, _flags, _address = control.recvmsg(4096, _socket.CMSG_SPACE(2 * 4), _socket.MSG_CMSG_CLOEXEC)
    except OSError:
        data = b""
    if not data:
        return None
    fds = passed_fds(ancillary)
    try:
        request = pickle.loads(data)
    except Exception:  # noqa: BLE001 - not our protocol: the caller is told nothing and its workers fail
        request = ("?",)
    if request[0] == "fork" and len(fds) == 2:
        return ("fork", request[1], fds)
    for fd in fds:
        os.close(fd)
    return tuple(request) if request[0] == "wait" else ("?",)


def ask_wait(control, pid, timeout):
    """The caller: worker `pid`'s exit status as `Popen.returncode` gives it, from the zygote, which waits up to
    `timeout` seconds (None: not at all); None while it runs. Raises OSError, EOFError or UnpicklingError when
    the zygote is gone."""
    control.send(pickle.dumps(("wait", pid, timeout)))
    return pickle.loads(control.recv(4096))


def answer_wait(control, status):
    """The zygote: the answer to a `wait`."""
    control.send(pickle.dumps(status))
