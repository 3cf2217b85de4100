"""A redis-server of a test's own, for the remote cache's tests in every tier folder (the fleet's, the
environment's, the missing-tools ones): the team's remote tier on 127.0.0.1, with nothing kept on disk."""
import shutil
import socket
import subprocess
import time

REDIS = shutil.which("redis-server")


def free_port():
    """A TCP port on 127.0.0.1 no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Redis:
    """A redis-server of this test's own (no persistence), and a client to look at what it holds."""

    def __init__(self, folder, password=None, extra=()):
        import redis

        self.port = free_port()
        argv = [REDIS, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(folder)]
        if password:
            argv += ["--requirepass", password]
        argv += list(extra)
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port, password=password)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def url(self, query=""):
        return f"redis://127.0.0.1:{self.port}/0" + (f"?{query}" if query else "")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
