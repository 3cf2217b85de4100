"""The `mlirgpu` command as a native program (launcher.c): a served compile without Python's start-up.

Every `mlirgpu compile` a build runs per source (Ninja, Meson, make, a CI script) starts a client; in Python
that is 14 ms of CPU, most of it the interpreter's start-up, paid per source. launcher.c sends a command to a
running compile server of this installation itself and becomes the Python client (mlirgpu.server.client) for anything
else, so outputs, messages and exit codes stay the Python client's.

    python -m mlirgpu.server.launcher DESTINATION     build it for this installation and install it at DESTINATION

tools/bootstrap installs it over the virtual environment's `mlirgpu` script (where a C compiler is found; the
Python script stays otherwise). It is built for one installation: the Python it becomes, and the socket name of
this installation's server (mlirgpu.execution.rendezvous), are compiled in. It checks the server's card (its fingerprint
and the files it is made of) before every request, so an edited or upgraded package is still seen.
"""
import os
import shlex
import shutil
import subprocess
import sys

from ..execution import rendezvous

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.c")


def _c_string(text):
    """`text` as a C string literal (for -D)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build(destination, python=None):
    """Compile launcher.c for this installation (becoming `python`, default this one) and put it at
    `destination` atomically; None, or the reason it could not be built."""
    python = python or os.path.abspath(sys.executable)
    socket = os.path.basename(rendezvous.socket_path(""))[: -len(".sock")]
    compiler = shlex.split(os.environ.get("CC", "")) or [shutil.which("cc") or shutil.which("gcc") or "cc"]
    partial = f"{destination}.{os.getpid()}.partial"
    try:
        built = subprocess.run([*compiler, "-O2", "-o", partial, f"-DMLIRGPU_PYTHON={_c_string(python)}",
                                f"-DMLIRGPU_SOCKET={_c_string(socket)}", SOURCE],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        if built.returncode != 0:
            return f"{compiler[0]} failed on launcher.c: {built.stderr.decode(errors='replace').strip()[:500]}"
        os.replace(partial, destination)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot build the launcher: {exc}"
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return None


def main(argv):
    if len(argv) != 1:
        sys.stderr.write("usage: python -m mlirgpu.server.launcher DESTINATION\n")
        return 2
    problem = build(argv[0])
    if problem:
        sys.stderr.write(f"mlirgpu.server.launcher: {problem}; `mlirgpu` stays the Python client\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
