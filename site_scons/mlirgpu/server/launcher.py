"""The `mlirgpu` command as a native program (launcher.c): a served compile without Python's start-up.

Every `mlirgpu compile` a build runs per source (Ninja, Meson, make, a CI script) starts a client; in Python
that is 14 ms of CPU, most of it the interpreter's start-up, paid per source. launcher.c sends a command to a
running compile server of this installation itself and becomes the Python client (mlirgpu.server.client) for anything
else, so outputs, messages and exit codes stay the Python client's.

    python -m mlirgpu.server.launcher DESTINATION     build it for this installation and install it at DESTINATION
    mlirgpu --launcher                                print this installation's launcher (built on first use)
    mlirgpu --install-launcher [DESTINATION]          install it over the `mlirgpu` script pip wrote (or DESTINATION)

tools/bootstrap installs it over the virtual environment's `mlirgpu` script (where a C compiler is found; the
Python script stays otherwise). An installation pip made without the bootstrap gets it too: the compile server,
on its first start, builds it into the user's cache (`scons-mlir-gpu/launcher/`, one file per launcher.c, Python
and installation) in a child of its own, and `mlirgpu --launcher` prints that file, which is what the CMake
package and the Meson recipe run for each compile. It is built for one installation: the Python it becomes,
and the socket name of this installation's server (mlirgpu.execution.rendezvous), are compiled in. It checks
the server's card (its fingerprint and the files it is made of, which the server writes with `write_card`)
before every request, so an edited or upgraded package is still seen.
"""
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from ..cache.store import user_cache_root
from ..execution import rendezvous, server_protocol

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.c")


def _c_string(text):
    """`text` as a C string literal (for -D)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _socket_name():
    return os.path.basename(rendezvous.socket_path(""))[: -len(".sock")]


def build(destination, python=None):
    """Compile launcher.c for this installation (becoming `python`, default this one) and put it at
    `destination` atomically; None, or the reason it could not be built."""
    python = python or os.path.abspath(sys.executable)
    socket = _socket_name()
    compiler = shlex.split(os.environ.get("CC", "")) or [shutil.which("cc") or shutil.which("gcc") or "cc"]
    folder, name = os.path.split(os.path.abspath(destination))
    partial = os.path.join(folder, f".{name}.{os.getpid()}.partial")  # hidden: no reader takes it for the launcher
    try:
        # The compiler's temporary files stay beside the launcher: the server builds it while it serves a
        # client whose TMPDIR it inherited, and nothing may land in a build's folders that it did not declare.
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            built = subprocess.run([*compiler, "-O2", "-o", partial, f"-DMLIRGPU_PYTHON={_c_string(python)}",
                                    f"-DMLIRGPU_SOCKET={_c_string(socket)}", SOURCE],
                                   stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
                                   env=dict(os.environ, TMPDIR=scratch))
        if built.returncode != 0:
            return f"{compiler[0]} failed on launcher.c: {built.stderr.decode(errors='replace').strip()[:500]}"
        os.replace(partial, destination)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot build the launcher: {exc}"
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return None


def cached():
    """Where this installation's launcher is kept in the user's cache: a file per launcher.c, Python and
    installation (the server's socket name), so an upgrade, another venv or another Python gets its own."""
    with open(SOURCE, "rb") as handle:
        key = hashlib.sha256(b"\0".join([handle.read(), os.path.abspath(sys.executable).encode(),
                                          _socket_name().encode()])).hexdigest()[:16]
    return os.path.join(user_cache_root(), "launcher", f"mlirgpu-{key}")


def ensure():
    """(path, None) of this installation's launcher in the user's cache, built there now if it is missing; or
    (None, why) where it cannot be built (no C compiler: the Python client then serves every command)."""
    path = cached()
    if os.access(path, os.X_OK):
        return path, None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as exc:
        return None, f"cannot make {os.path.dirname(path)}: {exc.strerror}"
    problem = build(path)
    return (None, problem) if problem else (path, None)


def script():
    """The `mlirgpu` command pip installed for this Python (the Python client's script)."""
    return os.path.join(sysconfig.get_path("scripts"), "mlirgpu")


def write_card(directory):
    """Write the server's card beside its socket: its fingerprint and the files it is made of, so a client that
    cannot compute the fingerprint (launcher.c) can check it by their names, sizes and times. Returns the
    fingerprint."""
    inputs = rendezvous.fingerprint_inputs()
    made = rendezvous.fingerprint_of(inputs)
    path = card_path(directory)
    partial = f"{path}.{os.getpid()}"
    try:
        os.unlink(partial)  # anything of that name is not ours: written anew, never through a planted link
    except FileNotFoundError:
        pass
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "w", encoding="utf-8") as card:  # whole or absent for a reader
        card.write(server_protocol.card_text(made, *inputs))
    os.replace(partial, path)
    return made


def card_path(directory):
    return rendezvous.socket_path(directory)[: -len(".sock")] + ".card"


def print_launcher():
    """`mlirgpu --launcher`: print the program a build recipe runs as `mlirgpu` for each compile: this
    installation's launcher (built into the user's cache if it is not there yet), else, with a warning saying
    why, the Python script pip installed, which serves the same commands a little slower."""
    path, problem = ensure()
    if problem:
        sys.stderr.write(f"mlirgpu: warning: no native launcher: {problem}; each command starts Python "
                         "(fix: install a C compiler, such as Debian's gcc, or name one in CC)\n")
        path = script() if os.access(script(), os.X_OK) else None
    if not path:
        sys.stderr.write(f"mlirgpu: error: no `mlirgpu` command beside {sys.executable} (fix: pip install "
                         "scons-mlir-gpu into this environment)\n")
        return 1
    print(path)
    return 0


def install(destination=None):
    """`mlirgpu --install-launcher [DESTINATION]`: build the launcher and install it at DESTINATION, by default
    over the script pip installed (what tools/bootstrap does), so every `mlirgpu` run from PATH is native."""
    problem = build(destination or script())
    if problem:
        sys.stderr.write(f"mlirgpu: error: {problem}; `mlirgpu` stays the Python client (fix: install a C "
                         "compiler, such as Debian's gcc, or name one in CC)\n")
        return 1
    return 0


def main(argv):
    """`python -m mlirgpu.server.launcher DESTINATION`, and the `mlirgpu` command's `--launcher` and
    `--install-launcher [DESTINATION]` (mlirgpu.server.client hands them here)."""
    if argv[:1] == ["--launcher"] and len(argv) == 1:
        return print_launcher()
    if argv[:1] == ["--install-launcher"] and len(argv) <= 2:
        return install(*argv[1:])
    if len(argv) == 1 and not argv[0].startswith("-"):
        return install(argv[0])
    sys.stderr.write("usage: mlirgpu --launcher | mlirgpu --install-launcher [DESTINATION] | "
                     "python -m mlirgpu.server.launcher DESTINATION\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
