"""Runs of the tools a compile server keeps loaded, taken by whoever runs one (a command in a runner, a build's
worker, SCons itself): the server hands over a started run's streams (mlirgpu.llvm.process.handed_run), so the
run costs no tool start-up. Installed as suppliers of mlirgpu.llvm.process, which never reaches a server itself."""
import contextlib
import os

from ..errors import CompileError
from ..llvm.process import handed_run, supply
from . import rendezvous, server_protocol


def supply_from_server(offer):
    """Take runs of the compile server's loaded tools whenever this process runs one (`offer`: the server's
    socket and those programs)."""
    path, programs = offer
    for program in programs:
        supply(program, lambda argv: take_from_server(path, argv))


def supply_from_running_server():
    """Take runs of MLIR's tools from the running compile server of this installation, when there is one, whenever
    this process runs one (a build tool's batches of translations, its lowerings). MLIRGPU_SERVER=off: never."""
    from ..llvm import toolchain

    if rendezvous.wanted():
        for tool in ("mlir-translate", "mlir-opt"):
            with contextlib.suppress(CompileError):
                supply(toolchain.llvm_tool(tool), _take_from_running_server)


def _take_from_running_server(argv):
    """A started run of `argv` from the running compile server, or None (the server's folder is looked up only
    when a run starts)."""
    try:
        path = rendezvous.socket_path(rendezvous.folder())
    except rendezvous.Unavailable:
        return None
    return take_from_server(path, argv)


def take_from_server(path, argv):
    """A started run of `argv` from the compile server at `path`, in this process's folder and environment (a
    _Prestarted), or None: no server, or it has no such tool loaded."""
    connection = rendezvous.connect(path)
    if connection is None:
        return None
    try:
        server_protocol.request(connection, server_protocol.tool_request(argv, os.getcwd(), dict(os.environ)))
        reply, fds = server_protocol.receive_passing(connection, descriptors=4)
        if reply.get("kind") == "tool" and len(fds) == 4:
            return handed_run(argv, int(reply["pid"]), fds)
        for fd in fds:
            os.close(fd)
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        connection.close()
