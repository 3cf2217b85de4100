"""The MLIR and LLVM tools the compile server (mlirgpu.server.service) keeps loaded for its commands, and how a
command that runs one is handed a run of it (a `tool` request: argv, folder and environment).

Each tool a fork server can keep (mlirgpu.execution.forkserver.loadable) gets one: mlir-translate's from the
start, which nearly every compile runs, the others' from their first request. The server hands over a fresh
run's pipes and pid (SCM_RIGHTS), so a run costs no loading of libMLIR or libLLVM; only a command that runs a
tool asks (mlirgpu.execution.served_tools), so one served from the stage cache starts none. Where the fork
servers' library cannot be built (no C compiler), two mlir-translates of the usual command line wait prestarted.
"""
import os
import sys

from ..errors import CompileError
from ..execution import forkserver, server_protocol as protocol
from ..execution.server_protocol import reply
from ..llvm import mlirtools, process


class Tools:
    """The tools a server keeps loaded, in its folder `directory`; `children`: the server's processes to reap,
    which a fork server that stopped answering joins."""

    def __init__(self, directory, children):
        self.directory = directory
        self.children = children
        self.loadable = set()  # the programs a fork server can keep (real paths)
        self.preload = None  # the fork servers' library (mlirgpu.execution.forkserver), None where it cannot be built
        self.forkservers = {}  # program (real path) -> its fork server, started at its first request
        self.failures = {}  # program -> fork servers of it that stopped answering (after three, none is started)
        self.pool = []  # without fork servers: prestarted mlir-translates (process._Prestarted)
        self.spares = []  # prestarted tools handed to commands, reaped once they end

    def start(self):
        """Start what serves from the start; the programs commands may ask to run (for served_tools)."""
        self._start_forkservers()
        self._prestart()
        return sorted(self.loadable) if self.preload else sorted({ready.argv[0] for ready in self.pool})

    def loaded(self):
        """The names of the tools kept loaded in fork servers now."""
        return sorted(os.path.basename(program) for program in self.forkservers)

    def _start_forkservers(self):
        """Build the fork servers' library and start mlir-translate's. Where the library cannot be built (no C
        compiler), prestarted mlir-translates serve instead."""
        found = forkserver.loadable()
        self.loadable = set(found.values())
        if not self.loadable:
            return
        self.preload, reason = forkserver.library(self.directory)
        if self.preload is None:
            print(f"mlirgpu server: tools start per run: {reason}", file=sys.stderr, flush=True)
            return
        if "mlir-translate" in found:
            self._forkserver(found["mlir-translate"])

    def _forkserver(self, program):
        """The fork server of `program`, started now if it was not (None until it is, or if it cannot be)."""
        if program in self.forkservers:
            return self.forkservers[program]
        if program in self.loadable and self.failures.get(program, 0) < 3:
            try:
                self.forkservers[program] = forkserver.ForkServer(program, self.preload)
            except OSError as exc:
                print(f"mlirgpu server: cannot start a fork server of {program}: {exc}", file=sys.stderr, flush=True)
                self.loadable.discard(program)
        return None

    def _drop_forkserver(self, program):
        """A fork server that stopped answering: closed, reaped once it ends; the next request starts another."""
        dropped = self.forkservers.pop(program)
        dropped.close()
        self.children.add(dropped.pid)
        self.failures[program] = self.failures.get(program, 0) + 1
        print(f"mlirgpu server: the fork server of {program} stopped answering", file=sys.stderr, flush=True)

    def _prestart(self):
        """mlir-translates of this server's environment, loaded and waiting for the next commands' input (two:
        a build runs commands two at a time or more), where fork servers cannot serve."""
        while self.preload is None and len(self.pool) < 2:
            try:
                self.pool.append(process.prestart(mlirtools.translate_argv()))
            except (CompileError, OSError):
                return

    def hand_over(self, connection, request):
        """Give the requesting command a run of the tool it names (its pipes and pid), forked by the tool's
        fork server or, without those, a prestarted mlir-translate of the same command line; `none` when
        there is none (the command starts the tool itself). Whether a run was handed over."""
        if not protocol.well_formed(request, run=False):
            reply(connection, protocol.no_tool())
            return False
        argv, folder, environment = request["argv"], request["cwd"], request["env"]
        program = os.path.realpath(argv[0])
        if self.preload is not None:
            server = self._forkserver(program)
            run = server.run(argv, folder, environment) if server else None
            if server and run is None and not server.ready:
                self._drop_forkserver(program)
        else:
            ready = next((item for item in self.pool
                          if process.same_tool(item.argv) == process.same_tool(argv) and item.poll() is None), None)
            run = (ready.pid, ready.handed()) if ready else None
            if ready:
                self.pool.remove(ready)
                self.spares.append(ready)
        if run is None:
            reply(connection, protocol.no_tool())
            return False
        pid, fds = run
        try:
            protocol.send_tool_run(connection, pid, fds)
        except OSError:
            pass  # the command went away: the run ends on EOF
        finally:
            for fd in fds:
                os.close(fd)
        self._prestart()
        return True

    def reap(self):
        """Forget the handed-over and prestarted tools that ended."""
        self.spares = [spare for spare in self.spares if spare.poll() is None]
        self.pool = [ready for ready in self.pool if ready.poll() is None or ready.close()]

    def close(self):
        """Close this process's ends of the prestarted tools and the fork servers (each ends when its runs in
        flight have): when the server ends, and in a process forked from it."""
        for ready in self.pool:
            ready.close()
        for server in self.forkservers.values():
            server.close()
