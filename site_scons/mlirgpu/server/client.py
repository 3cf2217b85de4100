"""The `mlirgpu` command: a thin client of the compile server (mlirgpu.server.service) for `compile` and `list-outputs`,
the full command line (mlirgpu.frontends.cli) for everything else and whenever no server can serve.

A client imports nothing heavy. It sends its arguments, folder, environment, umask and resource limits to the
server of this installation (starting one on first use); once the server handed the command to a runner, it
passes its own stdin, stdout and stderr (/dev/null for one that is closed) to that runner alone (a socket the
server's answer carries), so a server that is stopped or hangs never holds them; it exits with the command's
exit code: the outputs, messages and exit codes are those of `MLIRGPU_SERVER=off`, which runs the command in
this process.
A server that does not start, does not answer within `$MLIRGPU_SERVER_TIMEOUT` seconds (default 10), dies
before the command ended, or answers something else, costs one warning line and an in-process compile.

`mlirgpu server start|stop|status` (mlirgpu.frontends.server_command) starts one now, stops it, or says what it served;
`mlirgpu --launcher` prints the native launcher of this installation and `mlirgpu --install-launcher [PATH]`
installs it (mlirgpu.server.launcher).
"""
import os
import resource
import sys
import time

from ..execution import rendezvous, server_protocol

SERVED = ("compile", "list-outputs")


def run_remote(argv):
    """Run `mlirgpu <argv>` on the server; its exit code, or None when it must run in this process."""
    try:
        directory = rendezvous.folder()
    except rendezvous.Unavailable as exc:
        _warn(f"the compile server is not used: {exc}")
        return None
    path = rendezvous.socket_path(directory)
    _open_standard_streams()
    umask = os.umask(0)
    os.umask(umask)
    # The command runs with this process's umask and resource limits (mlirgpu.llvm.process.taken), not the server's.
    limits = {name: list(resource.getrlimit(getattr(resource, f"RLIMIT_{name}"))) for name in server_protocol.LIMITS}
    message = server_protocol.run_request(rendezvous.fingerprint(), argv, os.getcwd(), dict(os.environ), umask, limits)
    why = "it did not start"
    for _attempt in range(3):
        connection = rendezvous.connect(path) or rendezvous.start_server(directory)
        if connection is None:
            break
        runner_socket = None
        try:
            server_protocol.request(connection, message)
            reply, passed = server_protocol.receive_passing(connection)
            runner_socket = passed[0] if len(passed) == 1 else None
            for fd in passed[1:]:
                os.close(fd)
            if reply.get("kind") == "replaced":  # a server of another version, now gone: start ours
                time.sleep(0.05)
                continue
            if reply.get("kind") == "elsewhere":  # it would not see the files this process sees
                _warn(f"the compile server is not used: {reply.get('message')}; compiling in this process")
                return None
            if reply.get("kind") != "started" or runner_socket is None:
                why = f"it answered {reply.get('message') or reply.get('kind')!r}"
                break
            server_protocol.send_streams(runner_socket)
            return _wait_for_exit(connection, reply["pid"] if _sees_server(connection) else None)
        except KeyboardInterrupt:
            return 130  # the connection closes: the server stops the command
        except (OSError, ValueError, ConnectionError, KeyError, TypeError) as exc:
            why = str(exc) or type(exc).__name__
            break
        finally:
            if runner_socket is not None:
                os.close(runner_socket)
            connection.close()
    _warn(f"the compile server failed ({why}); compiling in this process")
    return None


def _sees_server(connection):
    """Whether this process sees the server's processes by their pids: not from inside a pid namespace of its
    own (`unshare -p`), where the kernel gives the server's pid as 0."""
    return rendezvous.peer(connection)[0] != 0


def _wait_for_exit(connection, runner):
    """The command's exit code. The command may run long (its tools have their own time limits); the end of
    its runner (mlirgpu.server.runner) without an answer is the server's failure. `runner`: its pid, None where this
    process cannot see it (its end then closes the connection: the server, or the runner itself, answers)."""
    connection.settimeout(1.0)
    while True:
        try:
            reply = server_protocol.receive(connection)
        except TimeoutError:
            if runner is None:
                continue
            try:
                os.kill(runner, 0)
            except ProcessLookupError:
                raise ConnectionError("the server's process for this compile ended without an answer") from None
            continue
        if reply.get("kind") == "exit":
            if reply.get("signal"):  # its runner was killed: a bug of ours, said as the command would say it
                sys.stderr.write(f"mlirgpu: error: internal error: the compile ended by signal {reply['signal']} "
                                 "(fix: please report it; MLIRGPU_SERVER=off compiles without the server)\n")
            return int(reply["code"])
        raise ValueError(f"unexpected answer {reply.get('kind')!r}")


def _folder_problem():
    """Why a command cannot run in this process's folder (its relative paths are resolved there), or None: the
    folder was deleted, or its path is longer than the system's paths (a folder entered step by step can be;
    every absolute path the compile makes from it would fail)."""
    try:
        here = os.getcwd()
    except FileNotFoundError:
        return "the current folder was deleted (fix: run the command from a folder that exists)"
    except OSError as exc:
        return f"the current folder cannot be read ({exc.strerror}) (fix: run the command from another folder)"
    limit = os.pathconf("/", "PC_PATH_MAX")
    if len(os.fsencode(here)) >= limit:
        return (f"the current folder's path is {len(os.fsencode(here))} bytes, longer than this system's paths "
                f"({limit}) (fix: run the command from a folder with a shorter path)")
    return None


def _open_standard_streams():
    """/dev/null in place of a closed stdin, stdout or stderr (`mlirgpu compile ... <&- >&- 2>&-`): the server
    takes three streams, and no socket of this process may take one's number; what the command writes there
    goes nowhere, as it would in this process."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one


def _warn(text):
    print(f"mlirgpu: warning: {text}", file=sys.stderr, flush=True)  # nothing where stderr was closed


def main(argv=None):
    command = argv is None
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--launcher"], ["--install-launcher"]):
        from . import launcher

        return launcher.main(argv)
    problem = _folder_problem() if argv[:1] and argv[0] in SERVED else None
    if problem:
        sys.stderr.write(f"mlirgpu: error: {problem}\n")
        return 1
    if argv[:1] and argv[0] in SERVED and "-h" not in argv and "--help" not in argv:
        try:
            code = run_remote(argv) if rendezvous.wanted() else None
        except Exception as exc:  # noqa: BLE001 - a bad MLIRGPU_SERVER* setting's CompileError: one line, as the
            from ..errors import CompileError  # command line says errors (loaded only now: 0.3 ms of every client)

            if not isinstance(exc, CompileError):
                raise
            sys.stderr.write(f"mlirgpu: {exc}\n")
            return 1
        if code is not None:
            if command:  # the command is done: the interpreter's teardown would only delay the build tool
                for stream in (sys.stdout, sys.stderr):
                    if stream is not None:  # None where it was closed (`>&-`)
                        stream.flush()
                os._exit(code)
            return code
    from ..util.heap import no_collection

    with no_collection():
        from ..frontends.cli import main as cli_main
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
