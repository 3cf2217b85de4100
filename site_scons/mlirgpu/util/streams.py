"""The standard streams of a command whose reader may go away (`mlirgpu list-outputs ... | head`): which are
closed, and how to stop writing to them without Python's complaint at exit."""
import os
import select
import sys


def closed_streams():
    """The standard streams (stdout, stderr) whose reader went away: a pipe or socket that poll() finds in error
    or hung up. Only these end a command quietly: a BrokenPipeError from a tool's pipe is a failure to report."""
    closed = []
    for stream in (sys.stdout, sys.stderr):
        try:
            poller = select.poll()
            poller.register(stream.fileno(), 0)  # errors and hang-ups are reported whatever is asked
            if any(events & (select.POLLERR | select.POLLHUP) for _fd, events in poller.poll(0)):
                closed.append(stream)
        except (AttributeError, OSError, ValueError):  # no such stream, or no file behind it
            continue
    return closed


def silence(streams):
    """Point `streams` at /dev/null, so what is still buffered for them is not retried at the interpreter's
    exit (Python would print an 'Exception ignored' message about it)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in streams:
        os.dup2(devnull, stream.fileno())
    os.close(devnull)
