"""The runners a compile server (mlirgpu.server.service) keeps: processes forked from it (mlirgpu.server.runner)
that run its clients' commands one after another. The server keeps one idle for the next command, hands each
`run` request to an idle one with the client's streams and connection (the runner answers the client itself),
kills a runner whose client went away, and answers the client for a runner that died. The server never holds
a client's streams: the runner takes them from the client itself, on a socket pair made for the command (one end
to the runner with the request, the other to the client with the `started` answer), so a server stopped or hung
before, while or after it hands a command over keeps no build tool reading them waiting.
"""
import contextlib
import os
import signal
import socket as _socket

from ..execution import server_protocol as protocol
from ..execution.server_protocol import reply
from . import runner

MAX_IDLE_RUNNERS = max(2, os.cpu_count() or 2)  # a runner beyond these ends once its command ended


class Runners:
    """The runners of a server. `offer`: the server's socket and the programs whose runs it hands over;
    `children`: the server's processes to reap, which a runner told to end joins; `forget_in_child(keep)`: run in
    a forked runner, it closes the server's descriptors but `keep`."""

    def __init__(self, offer, children, forget_in_child):
        self.offer = offer
        self.children = children
        self.forget_in_child = forget_in_child
        self.items = []  # _Runner
        self.forked = 0
        self._said = {}  # while polled: a runner's channel -> the runner
        self._left = {}  # while polled: a running command's client connection -> its runner

    def busy(self):
        return any(item.run for item in self.items)

    def keep_one_idle(self):
        """Fork a runner unless one is idle: the next command finds it ready."""
        if not any(item.run is None for item in self.items):
            self.new()

    def new(self, also_close=()):
        """Fork a runner (None if it cannot be); `also_close`: the descriptors of the request being handled."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:
            try:
                ours.close()
                self.forget_in_child(keep=theirs)
                for fd in also_close:
                    with contextlib.suppress(OSError):
                        fd.close() if isinstance(fd, _socket.socket) else os.close(fd)
                runner.serve(theirs, self.offer)
            finally:
                os._exit(1)
        theirs.close()
        self.forked += 1
        item = _Runner(pid, ours)
        self.items.append(item)
        return item

    def start(self, connection, data):
        """Hand the command (the request `data`) to an idle runner, forking one if none is; whether one took it
        (else the client is told, and compiles itself)."""
        for _attempt in range(2):
            item = next((item for item in self.items if item.run is None), None) or self.new(also_close=[connection])
            if item is None:
                break
            runners_end, clients_end = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
            try:
                protocol.hand_to_runner(item.channel, data, runners_end.fileno(), connection.fileno())
            except OSError:
                clients_end.close()
                self.end(item, kill=True)  # it has just ended
                continue
            finally:
                runners_end.close()
            with clients_end:
                reply(connection, protocol.started(item.pid), clients_end.fileno())
            item.run = _Run(connection)
            return True
        reply(connection, protocol.error("no runner could be started"))
        return False

    def watched(self):
        """The descriptors to poll: each runner's channel (its word) and each running command's connection (its
        client sent something or went away)."""
        self._said = {item.channel.fileno(): item for item in self.items}
        self._left = {item.run.connection.fileno(): item for item in self.items if item.run}
        return [*self._said, *self._left]

    def attend(self, ready):
        """Act on the `ready` ones of the descriptors `watched` gave: a runner's word first (a client that
        leaves because its runner answered it is no client gone), then the clients that left."""
        for item in [self._said[fd] for fd in ready if fd in self._said]:
            if item in self.items:
                self._runner_said(item)
        for item in [self._left[fd] for fd in ready if fd in self._left]:
            if item in self.items and item.run is not None:
                self._client_left(item)

    def _runner_said(self, item):
        """A runner's word: its command ended and it answered the client (and whether it ends now), or it
        ended without a word (the server answers the client for it)."""
        retire = protocol.receive_retire(item.channel)
        run, item.run = item.run, None
        if retire is None:
            status = self.end(item, kill=True)
            if run is not None:
                run.finish(_died(status))
            return
        if run is not None:
            run.finish(None)
        if retire or sum(1 for other in self.items if other.run is None) > MAX_IDLE_RUNNERS:
            self.end(item, kill=False)

    def _client_left(self, item):
        """The client of a running command sent something or went away: it no longer waits, so the command
        (its runner, and the runner's LLVM worker with it) is killed."""
        run, item.run = item.run, None
        self.end(item, kill=True)
        run.finish(None)

    def end(self, item, kill):
        """Kill a runner and wait for it (its exit status), or close its channel and let it end (a runner that
        is done or idle ends on that); the server reaps it then."""
        self.items.remove(item)
        item.channel.close()
        if not kill:
            self.children.add(item.pid)
            return None
        with contextlib.suppress(OSError):
            os.kill(item.pid, signal.SIGKILL)
        try:
            return os.waitpid(item.pid, 0)[1]
        except ChildProcessError:
            return None

    def close(self):
        """The server ends: each runner ends once it is done, and a command in flight goes on and answers its
        client (this server's copy of the client's connection is the runner's now)."""
        for item in list(self.items):
            if item.run is not None:
                item.run.forget()
            self.end(item, kill=False)

    def forget(self, keep):
        """In a process forked from the server: close the runners' channels (but `keep`) and the clients'
        connections and streams of running commands, so that no client waits for a copy held here."""
        for item in self.items:
            if item.channel is not keep:
                item.channel.close()
            if item.run is not None:
                item.run.forget()


class _Runner:
    """A runner process (mlirgpu.server.runner) and the command it runs (a _Run), if any."""

    def __init__(self, pid, channel):
        self.pid = pid
        self.channel = channel
        self.run = None


class _Run:
    """A running command's client: its connection."""

    def __init__(self, connection):
        self.connection = connection

    def finish(self, answer):
        """Answer the client (None: it was answered, or went away) and let it go."""
        if answer is not None:
            reply(self.connection, answer)
        self.connection.close()

    def forget(self):
        """In a forked child: close this process's copy without a word to the client."""
        self.connection.close()


def _died(status):
    """The answer for a command whose runner ended without answering: exit code 1; a runner killed by a signal
    is a bug of ours, which the client says as the command would have said it (the signal is in the answer)."""
    code = os.waitstatus_to_exitcode(status) if status is not None else 1
    return protocol.exit_answer(1, -code if code < 0 else None)
