"""The `mlirgpu` command as a native program (launcher.c): a served compile without Python's start-up.

Every `mlirgpu compile` a build runs per source (Ninja, Meson, make, a CI script) starts a client; in Python
that is 14 ms of CPU, most of it the interpreter's start-up, paid per source. launcher.c sends a command to a
running compile server of this installation itself and becomes the Python client (mlirgpu.server.client) for anything
else, so outputs, messages and exit codes stay the Python client's.

    python -m mlirgpu.server.launcher DESTINATION     build it for this installation and install it at DESTINATION

tools/bootstrap installs it over the virtual environment's `mlirgpu` script (where a C compiler is found; the
Python script stays otherwise). It is built for one installation: the Python it becomes, and the socket name of
this installation's server (mlirgpu.execution.rendezvous), are compiled in. It checks the server's card (its fingerprint
and the files it is made of, which the server writes with `write_card`) before every request, so an edited or
upgraded package is still seen.
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


def write_card(directory):
    """Write the server's card beside its socket: its fingerprint and the files it is made of, so a client that
    cannot compute the fingerprint (launcher.c) can check it by their names, sizes and times. Returns the
    fingerprint."""
    inputs = rendezvous.fingerprint_inputs()
    folders, library = inputs
    made = rendezvous.fingerprint_of(inputs)
    lines = ["mlirgpu-card 1", f"F {made}"]
    for folder, files in folders.items():
        lines.append(f"D {folder}")
        lines += [f"P {size} {mtime} {name}" for name, size, mtime in files]
    lines.append(f"L {library[1]} {library[2]} {library[0]}" if library else "L none")
    path = card_path(directory)
    partial = f"{path}.{os.getpid()}"
    try:
        os.unlink(partial)  # anything of that name is not ours: written anew, never through a planted link
    except FileNotFoundError:
        pass
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w", encoding="utf-8") as card:  # whole or absent for a reader
        card.write("\n".join(lines) + "\n")
    os.replace(partial, path)
    return made


def card_path(directory):
    return rendezvous.socket_path(directory)[: -len(".sock")] + ".card"


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
