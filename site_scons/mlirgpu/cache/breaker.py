"""The failure breaker of a remote service (the remote cache's server, a Dask scheduler): after a fault nobody asks
it again for `seconds`, so a build pays the fault's cost about once and says it in one warning.

Its state is a file of the local cache (one per kind of service), shared by every process of this user's cache
(Ninja's many compiles, a server's runners); a breaker opened for another service (another URL) does not hold
this one. What a fault costs beyond that (a warning, a dropped client, a process that never asks again) is the
caller's.
"""
import time

from . import store

BREAKER_SECONDS = 60


class Breaker:
    """The breaker of the service `where` (its URL as shown), kept at `path`."""

    def __init__(self, path, where, seconds=BREAKER_SECONDS):
        self.path = path
        self.where = where
        self.seconds = seconds

    def is_open(self):
        """True while a recent fault (in this process, or another of this cache) holds the service off."""
        data = store.read_json(self.path)
        return isinstance(data, dict) and data.get("where") == self.where and data.get("until", 0) > time.time()

    def trip(self):
        """A fault: nobody asks the service for the next `seconds`."""
        store.write_json(self.path, {"where": self.where, "until": time.time() + self.seconds})
