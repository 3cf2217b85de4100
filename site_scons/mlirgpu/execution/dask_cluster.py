"""A client's connection to a Dask cluster (mlirgpu.execution.dask): a compile's job goes only to the workers of
its toolchain fingerprint (mlirgpu.execution.dask_fingerprint, asked of every worker), and its answer is waited
for. A worker lost mid-job is run again by the scheduler on another worker of the job's; when none of them is
left the job is submitted once more, and then (or when no answer came within `$MLIRGPU_EXECUTOR_WAIT` seconds)
the compile runs here after one warning. A scheduler that cannot be reached, or a cluster without a worker of
our fingerprint, costs one warning and local compiles; the verdict is kept for BREAKER_SECONDS in a file of the
local cache, so the other processes of a build (Ninja's) skip it."""
import os
import threading
import time

from ..cache.breaker import BREAKER_SECONDS, Breaker
from ..errors import CompileWarning
from ..util import environment
from .dask_fingerprint import worker_fingerprint
from .dask_worker import Refused, run_job

WAIT_VARIABLE = "MLIRGPU_EXECUTOR_WAIT"
POLL_SECONDS = 1.0  # how often a waiting compile checks that a worker it may run on is still in the cluster


def wait_seconds():
    """How long a compile waits for its worker's answer before compiling here: `$MLIRGPU_EXECUTOR_WAIT` (default
    600, as long as one tool may run), seconds from 1 to a week; anything else is an error naming the variable."""
    return environment.value(WAIT_VARIABLE)


class Executor:
    """A connection to the Dask scheduler of `url` at `address`, shared by the compiles of this process; its
    warnings go to the list `warnings`."""

    def __init__(self, url, address, breaker_path, timeout, warnings):
        self.url = url
        self.address = address
        self.breaker = Breaker(breaker_path, url)
        self.timeout = timeout
        self.warnings = warnings
        self.client = None
        self.lock = threading.Lock()
        self.workers = ({}, 0.0)  # address -> fingerprint, and when it was asked
        self.failed = False

    def _open(self):
        """Whether this compile skips the cluster: it failed this process (which then never asks again), or the
        breaker another process of this cache opened holds it off."""
        return self.failed or self.breaker.is_open()

    def _trip(self, why):
        if not self.failed:
            self.failed = True
            self.breaker.trip()
            self.warnings.append(CompileWarning(f"the Dask executor {self.url} is not used ({why}); compiling on "
                                                f"this machine, and not asking it again for {BREAKER_SECONDS} s"))

    def _connect(self):
        with self.lock:
            if self.client is None:
                from distributed import Client

                self.client = Client(self.address, timeout=self.timeout, set_as_default=False)
            return self.client

    def _matching(self, client, wanted, kind):
        known, asked = self.workers
        if time.time() - asked > 5 or not any(fps.get(kind) == wanted for fps in known.values()):
            known = client.run(worker_fingerprint)
            self.workers = (known, time.time())
        return [address for address, fps in known.items() if fps.get(kind) == wanted]

    def submit(self, job):
        """The worker's answer to `job` and that worker's address, or None when the compile must run here (a
        warning says why, once)."""
        wait = wait_seconds()  # a bad setting is an error whether or not the cluster is asked
        if self._open():
            return None
        try:
            client = self._connect()
            deadline = time.monotonic() + wait
            refused, lost = set(), 0
            for _attempt in range(3):
                matching = [address for address in self._matching(client, job["fingerprint"], job["toolkit_of"])
                            if address not in refused]
                if not matching and lost:
                    return self._here(f"the Dask worker given {job['source']} was lost and no other worker of this "
                                      "toolchain is left")
                if not matching:
                    theirs = sorted({fps.get(job["toolkit_of"], "?") for fps in self.workers[0].values()})
                    self._trip(f"no worker has this toolchain (fingerprint {job['fingerprint']}; the cluster's: "
                               f"{', '.join(theirs) or 'no workers'}); install the same tools and mlirgpu there")
                    return None
                future = client.submit(run_job, job, workers=matching, allow_other_workers=False, pure=False,
                                       key=f"mlirgpu-{os.path.basename(job['source'])}-{os.urandom(6).hex()}")
                try:
                    return self._answer(client, future, matching, deadline)
                except Refused:
                    refused.update(matching)
                    self.workers = ({}, 0.0)
                except _Lost:
                    future.cancel()
                    lost += 1
                    self.workers = ({}, 0.0)
                    if lost == 2:
                        return self._here(f"the Dask workers given {job['source']} were lost twice")
                except _Late:
                    future.cancel()
                    return self._here(f"the Dask cluster {self.url} gave no answer for {job['source']} within "
                                      f"{wait:g} s ({WAIT_VARIABLE})")
            return None
        except Exception as exc:  # noqa: BLE001 - connection and cluster faults of any kind: compile here
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            self._trip(reason)
            return None

    def _here(self, why):
        """None (this compile runs here), after one warning saying `why`; later compiles still ask the cluster."""
        self.warnings.append(CompileWarning(f"{why}; compiling it on this machine"))
        return None

    def _answer(self, client, future, matching, deadline):
        """`future`'s answer and the worker that gave it; _Lost once none of the `matching` workers it may run on
        is in the cluster (the scheduler would wait for them forever), _Late past `deadline`."""
        from distributed import KilledWorker

        # Waited for with a callback, not `future.result(timeout=...)`: distributed 2026.8's sync raises
        # UnboundLocalError when such a timeout races the answer (seen with 4 workers and 200 queued jobs).
        done = threading.Event()
        future.add_done_callback(lambda _future: done.set())
        while not done.wait(timeout=max(0.05, min(POLL_SECONDS, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise _Late
            if not set(matching) & set(client.nthreads()):
                raise _Lost
        try:
            answer = future.result()
        except KilledWorker:  # it died on every worker the scheduler tried: a job this cluster cannot run
            raise _Lost from None
        holders = client.who_has(future).get(future.key) or ["?"]
        return answer, holders[0]


class _Lost(Exception):
    """Every worker a job may run on left the cluster before answering."""


class _Late(Exception):
    """No answer within $MLIRGPU_EXECUTOR_WAIT seconds."""
