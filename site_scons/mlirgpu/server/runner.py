"""The compile server's command runners: processes forked from the booted server (mlirgpu.server.service) that run
`mlirgpu compile` and `mlirgpu list-outputs` commands one after another, each in its client's folder,
environment, umask, resource limits and streams (its LLVM worker takes the umask and limits with each call).
Between commands a runner keeps what a fork per command rebuilt every time: its LLVM worker (forked once, from
the runner's clean state), the libraries and facts both have loaded, and both processes' page tables
(measured on the benchmark corpus: a fork per command cost a fifth more CPU than the commands themselves).

A command must find a runner as a fresh fork would have left it, so a runner serves only commands that end
cleanly: one that fails, writes to its stderr (a warning or an error), leaves a thread running (a Dask client),
or is the runner's RUNNER_COMMANDS-th, is the runner's last, and the server forks a fresh one for the next.
Per command, the LLVM worker gets a scratch folder in the command's temporary folder (removed at its end) and an
empty LLVM log, which lives in the server's folder (a crash's message is that command's own).

The server and a runner share one SOCK_SEQPACKET pair: the server sends a `run` request as the client sent it
(mlirgpu.execution.server_protocol.hand_to_runner), with the runner's end of a socket pair made for the command
and the client's connection (SCM_RIGHTS); the client passes its stdin, stdout and stderr on the other end (mlirgpu.server.client).
Once the command's outputs are written and its copies of the client's streams closed (a build tool waits for
them), the runner answers the client itself (`exit` and the code: a compile outlives a server killed
meanwhile), after telling the server whether it retires. A reader that closed the command's stdout or stderr
ends the command as SIGPIPE ends a Unix filter: at once, without a message, exit code 141.
A runner ends when the server closes the channel, or after its command if the server is gone; while a command
runs, its client going away with no server left to stop the command ends the runner at once (`_on_io`).
"""
import socket as _socket
import contextlib
import fcntl
import io
import os
import select
import signal
import sys
import tempfile
import threading

from ..llvm import process, toolchain
from ..execution import compiles, served_tools, server_protocol as protocol

RUNNER_COMMANDS = 200


def serve(channel, offer):
    """A runner's life (in the process forked for it; never returns). `offer`: the server's socket and the
    programs whose runs it hands over (mlirgpu.execution.served_tools)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    served_tools.supply_from_server(offer)  # for the worker forked below too: its LLVM stages run llvm-mc and ld.lld
    own = os.path.dirname(offer[0])  # the server's folder, closed to others
    tempfile.tempdir = own  # no client's temporary folder sees the first scratch folder, removed at once
    compiles.serve_commands(own)  # its LLVM worker is forked now, and keeps its log here
    signal.signal(signal.SIGIO, _on_io)
    for served in range(1, RUNNER_COMMANDS + 1):
        handed = protocol.receive_handed(channel)
        if handed is None:  # the server closed the channel: it is ending, or has runners enough
            break
        request, (streams_socket, client_fd) = handed
        _watch([client_fd, channel.fileno()])
        try:
            streams = protocol.receive_streams(streams_socket)
            code, clean = run_command(streams, request) if streams else (None, True)
        finally:
            _unwatch()
        retire = not clean or served == RUNNER_COMMANDS or threading.active_count() > 1
        try:  # the server first: it then knows the command's end is no client going away
            protocol.send_retire(channel, retire)
        except OSError:
            retire = True  # the server is gone: this command was the last
        with _socket.socket(fileno=client_fd) as client:
            if code is not None:
                protocol.reply(client, protocol.exit_answer(code))
        if retire:
            break
    compiles.shutdown(wait=False)  # its worker's log and scratch folder go with it
    os._exit(0)


_watched = []  # while a command runs: its client's connection and the server's channel


def _watch(fds):
    """While the command runs, its client's connection and the server's channel signal this process (SIGIO,
    O_ASYNC) when either has something to read, which means it closed: neither sends anything meanwhile."""
    for fd in fds:
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    _watched[:] = fds
    _on_io()  # either may have closed before the watch began


def _unwatch():
    for fd in _watched:
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_ASYNC)
    _watched.clear()


def _on_io(*_signal):
    """The watchdog: a client gone (killed, interrupted) while no server is left to stop its command (stopped
    or killed meanwhile; a live one kills this runner itself) ends this runner at once, and its LLVM worker with
    it, so that no copy of the client's streams stays open here (Ninja, or `2>&1 | cat`, reads them to the end)
    and nothing is written for a client that is gone."""
    if _watched and all(_closed(fd) for fd in _watched):
        os.kill(os.getpid(), signal.SIGKILL)


def _closed(fd):
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class _ReaderGone(BaseException):
    """The reader of the command's stdout or stderr closed it (EPIPE): the command ends at once, as SIGPIPE ends
    a Unix filter, past any error boundary of the command (which would say something)."""


SIGPIPE_CODE = 128 + signal.SIGPIPE  # what a shell reads for a filter that SIGPIPE ended


class _ClientStream(io.FileIO):
    """One of the client's stdout and stderr: a write its reader is gone for ends the command (_ReaderGone); what
    is written after that (a flush as the command unwinds) goes nowhere."""

    gone = False

    def write(self, data):
        if self.gone:
            return len(data)
        try:
            return super().write(data)
        except BrokenPipeError:
            self.gone = True
            raise _ReaderGone from None


class _WatchedStderr(io.TextIOWrapper):
    """The client's stderr, remembering whether the command wrote to it."""

    written = False

    def write(self, text):
        if text:
            self.written = True
        return super().write(text)


def run_command(fds, request):
    """Run `mlirgpu <argv>` as the client would have run it; (its exit code, whether it ended cleanly)."""
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
    for fd in fds:  # one copy of each of the client's streams, released below
        os.close(fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)  # nothing read ahead before
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_ClientStream(1, "w", closefd=False)), encoding="utf-8",
                                  line_buffering=os.isatty(1))
    sys.stderr = stderr = _WatchedStderr(_ClientStream(2, "w", closefd=False), encoding="utf-8",
                                         errors="backslashreplace", line_buffering=True, write_through=True)
    code = 1
    try:
        # The client's umask and resource limits, in this process and (through each call) in its LLVM worker.
        with process.taken(request["umask"], request["limits"]):
            try:
                code = _command(request)
            finally:
                with contextlib.suppress(Exception):  # what the command wrote, within the client's limits
                    sys.stdout.flush()
                    sys.stderr.flush()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except _ReaderGone:
        code = SIGPIPE_CODE
    except BaseException:  # noqa: BLE001 - a bug of ours before the command's own error boundary
        import traceback

        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    compiles.command_ended()
    devnull = os.open(os.devnull, os.O_RDWR)
    for number in (0, 1, 2):  # the client's streams are released; the runner's own are empty
        os.dup2(devnull, number)
    os.close(devnull)
    os.chdir("/")
    return code, code == 0 and not stderr.written


def _command(request):
    """The command's exit code, in its client's environment and folder."""
    os.environ.clear()
    os.environ.update(request["env"])
    toolchain.forget()
    tempfile.tempdir = None  # found again from the client's TMPDIR
    compiles.command_starts()
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        print(f"mlirgpu: error: cannot enter {request['cwd']}: {exc.strerror}", file=sys.stderr)
        return 1
    from ..frontends.cli import main

    return main(list(request["argv"]))
