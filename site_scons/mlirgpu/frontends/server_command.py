"""`mlirgpu server start|stop|status`: start the compile server of this installation now, stop it, or say what it
served (its `status` answer, mlirgpu.execution.server_protocol)."""
import sys
import time

from ..execution import rendezvous, server_protocol


def server_command(action):
    """`mlirgpu server ACTION`; the command's exit code (3: `status` found no server)."""
    try:
        directory = rendezvous.folder()
    except rendezvous.Unavailable as exc:
        sys.stderr.write(f"mlirgpu: error: {exc} (fix: set MLIRGPU_SERVER_DIR to a private folder)\n")
        return 1
    path = rendezvous.socket_path(directory)
    connection = rendezvous.connect(path)
    if action == "start":
        connection = connection or rendezvous.start_server(directory)
        if connection is None:
            sys.stderr.write(f"mlirgpu: error: the compile server did not start (see {directory}/server.log)\n")
            return 1
    if connection is None:
        print(f"no compile server for this installation ({path})")
        return 0 if action == "stop" else 3
    try:
        server_protocol.request(connection, server_protocol.plain_request("stop" if action == "stop" else "status"))
        reply = server_protocol.receive(connection)
    finally:
        connection.close()
    if action == "stop":
        print(f"stopped the compile server (pid {reply.get('pid')})")
        return 0
    if reply.get("fingerprint") != rendezvous.fingerprint():
        print("the compile server is of another version of this installation (the next compile replaces it)")
    served = reply.get("served", {})
    print(f"compile server pid {reply['pid']}, up {time.time() - reply['started']:.0f} s, socket {path}\n"
          f"served {served.get('run', 0)} commands (in {served.get('runners', 0)} runners) and "
          f"{served.get('zygote', 0)} builds' workers; "
          f"refused {served.get('refused', 0)}; handed over {served.get('tool', 0)} tool runs "
          f"(loaded: {', '.join(reply.get('tools') or ['none'])}); log {reply.get('log')}"
          + (f"\nloaded for commands: {', '.join(reply['warm'])}" if reply.get("warm") else ""))
    return 0
