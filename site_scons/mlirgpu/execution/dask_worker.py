"""A Dask worker's side of distributed compiles (mlirgpu.execution.dask): `mlirgpu worker SCHEDULER` starts a
worker with this module as its preload (`dask_setup` checks the toolchain and says its fingerprint), and each
job the client submits is `run_job` here: the compile's files laid out under a scratch folder in the client's
shape, `mlirgpu compile` run there, and every file it wrote returned with its messages and result. A job of
another toolchain fingerprint (mlirgpu.execution.dask_fingerprint) is refused: this worker would not make the
same bytes."""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from ..cache import store
from ..llvm import toolchain
from ..version import PACKAGE
from .dask_fingerprint import fingerprint, own_toolkit

RESULT_VARIABLE = "MLIRGPU_RESULT_FILE"  # where `mlirgpu compile` writes its result for a worker to return
_RESULT_NAME = ".mlirgpu-remote-result.json"


class Refused(Exception):
    """A job for another toolchain: this worker would not make the same bytes."""


def dask_setup(worker):  # noqa: ARG001 - Dask's preload hook
    """`--preload mlirgpu.execution.dask_worker`: refuse to start without a usable toolchain, and say which one."""
    toolchain.llvm_tool("mlir-translate")  # a missing MLIR fails the worker's start, with the package to install
    print(f"mlirgpu worker: toolchain fingerprint {fingerprint()}", file=sys.stderr, flush=True)


def run_job(job):
    """Run one compile here (on a Dask worker): the written files, messages and result."""
    toolkit = own_toolkit(job["toolkit_of"])
    ours = fingerprint(toolkit)
    if job["fingerprint"] != ours:
        raise Refused(f"toolchain fingerprint {ours}, the job needs {job['fingerprint']}")
    root = tempfile.mkdtemp(prefix="mlirgpu-remote-")
    started = time.perf_counter()
    try:
        for relative, data in job["inputs"].items():
            path = os.path.join(root, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
        for relative in job["folders"]:
            os.makedirs(os.path.join(root, relative), exist_ok=True)
        cwd = os.path.join(root, job["cwd"])
        os.makedirs(cwd, exist_ok=True)
        argv = [arg if kind == "text" else (arg if kind == "relative" else os.path.join(root, arg))
                for kind, arg in job["argv"]] + (["--toolkit", toolkit] if toolkit else [])
        package_parent = os.path.dirname(PACKAGE)
        # MLIRGPU_EXECUTOR (mlirgpu.execution.dask.VARIABLE) emptied: a worker's compile runs here, never sent on.
        env = {**os.environ, "MLIRGPU_EXECUTOR": "", RESULT_VARIABLE: os.path.join(root, _RESULT_NAME),
               "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
        command_started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", *argv], cwd=cwd, env=env,
                             capture_output=True, check=False)
        command_seconds = time.perf_counter() - command_started
        result = None
        with contextlib.suppress(OSError, ValueError):
            result = store.read_json(os.path.join(root, _RESULT_NAME))
        files = {}
        for folder, _dirs, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root)
                if relative not in job["inputs"] and name != _RESULT_NAME and os.path.isfile(path):
                    with open(path, "rb") as handle:
                        files[relative] = handle.read()
        import socket

        return {"returncode": run.returncode, "stderr": run.stderr.decode("utf-8", "replace"), "files": files,
                "result": result, "root": root, "worker": f"{socket.gethostname()}:{os.getpid()}",
                "seconds": time.perf_counter() - started, "command_seconds": command_seconds}
    finally:
        shutil.rmtree(root, ignore_errors=True)
