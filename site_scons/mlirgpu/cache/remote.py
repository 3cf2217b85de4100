"""The remote tier of the stage cache: entries shared by a team or a CI fleet through Redis or Valkey, in the manner
of Triton's `RedisRemoteCacheBackend`, PyTorch Inductor's remote cache and sccache (the `redis` client from
PyPI, which speaks to both servers).

    MLIRGPU_REMOTE_CACHE=redis://[:PASSWORD@]HOST:PORT/DB[?mode=read][&ttl=SECONDS]   (rediss:// for TLS)
    MLIRGPU_REMOTE_CACHE_PASSWORD   the password, kept out of the URL (and so out of logs and build files)
    MLIRGPU_REMOTE_CACHE_TIMEOUT    seconds one request may take (default 0.5)
    MLIRGPU_REMOTE_CACHE_SECRET     the team's secret: only entries written with it are read

The stage cache looks here after a local miss, and a remote hit fills the local cache; what a compile stores goes
to both, unless `mode=read` (a CI job building untrusted changes reads the team's entries and cannot poison them).
An entry is one blob, `MAGIC + mode + tag + payload`, whose tag is an HMAC-SHA256 over the entry's Redis key
and its payload: with the team's secret as the HMAC's key when one is set (mode `k`), else a public constant
(mode `p`: a keyed hash that still binds the value to its key). A value stored under another key (two entries
swapped), partly written, of another format, written with another secret or none, fails the check and is a miss
(counted as rejected too), never another entry's output. Our store then replaces such a value, except that a
build without a secret leaves the values written with one (they may be the team's, which it cannot check).
Without a secret anyone who can write to the server can still write entries (`mode=read` keeps CI jobs from
it); with one, only those who hold it. Keys are the stage cache's keys, which hold the input's
hash, the core version and the identities of llvmlite's LLVM and of every tool that shapes the stage. Entries
expire after `ttl` seconds (default 30 days; Redis's own eviction policy may remove them sooner).

A server that cannot be reached, refuses us, or answers slower than the timeout opens a circuit breaker shared by
every process of this user's cache (a file beside the local entries): for the next minute no process asks the
server, so a build pays the timeout about once, prints one warning, and goes on with its local cache.
"""
import contextlib
import hashlib
import hmac
import urllib.parse

from .breaker import BREAKER_SECONDS, Breaker
from ..errors import CompileError, CompileWarning
from ..util import environment

VARIABLE = "MLIRGPU_REMOTE_CACHE"
DEFAULT_TTL = 30 * 24 * 3600
DEFAULT_TIMEOUT = 0.5
_PREFIX = "mlirgpu:stage:"
MAGIC = b"mlirgpu-remote-2\n"  # raised when the tag or the payload's layout changes: older values are misses
_NO_SECRET = b"mlirgpu remote cache entry, no team secret"
_KEYED, _PUBLIC = b"k", b"p"
_TAG = 32


# Clients by (URL, password, timeout), kept for the process's next compiles: a compile server's runner and its
# worker serve many, and a new client pays a connection, its handshake and the client library's version lookup
# (redis-py reads its package metadata for every connection it makes). The client library reconnects after a fork.
_clients = {}


class RemoteTier:
    """The remote cache named by a URL; `get` and `put` never raise for the server's faults (they open the
    breaker and tell `warn`, the compile's warning sink, in one CompileWarning; None: nobody is told)."""

    def __init__(self, url, breaker_path, password=None, timeout=DEFAULT_TIMEOUT, secret=None, warn=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("redis", "rediss") or not parts.hostname:
            raise CompileError(f"{VARIABLE}='{shown(url)}' is not a redis:// or rediss:// URL",
                               fix="set it to e.g. redis://cache.example.org:6379/0")
        query = urllib.parse.parse_qs(parts.query)
        unknown = sorted(set(query) - {"mode", "ttl"})
        if unknown:
            raise CompileError(f"{VARIABLE}: unknown setting '{unknown[0][:40]}'", fix="use mode=read and ttl=SECONDS")
        self.mode = query.get("mode", ["readwrite"])[-1]
        if self.mode not in ("read", "readwrite"):
            raise CompileError(f"{VARIABLE}: mode '{self.mode[:40]}' is neither read nor readwrite",
                               fix="use ?mode=read for a cache this build must not write")
        ttl = query.get("ttl", [str(DEFAULT_TTL)])[-1]
        if not ttl.isascii() or not ttl.isdigit() or not 0 < int(ttl) <= 10 * 365 * 24 * 3600:
            raise CompileError(f"{VARIABLE}: ttl '{ttl[:40]}' is not a number of seconds", fix="use e.g. ttl=86400")
        self.ttl = int(ttl)
        self.where = f"{parts.scheme}://{parts.hostname}:{_port(parts)}{parts.path or '/0'}"
        self.url = urllib.parse.urlunsplit(parts._replace(query=""))
        self.password = password
        self.timeout = timeout
        self.secret = secret
        self.breaker = Breaker(breaker_path, self.where)
        self.warn = warn
        self.client = None
        self.counts = {"remote_hits": 0, "remote_misses": 0, "remote_stores": 0, "remote_rejected": 0}
        self.rejected = set()  # keys whose value failed its check and is ours to replace

    # The server's faults.

    def _trip(self, exc):
        self.breaker.trip()
        self.client = None
        _clients.pop((self.url, self.password, self.timeout), None)  # its connections may be broken
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        if self.warn is not None:
            self.warn(CompileWarning(
                f"the remote cache {self.where} failed ({reason}); building with the local cache only, and not "
                f"asking it again for {BREAKER_SECONDS} s (check the server, or unset {VARIABLE})"))

    def _connection(self):
        if self.client is None:
            key = (self.url, self.password, self.timeout)
            if key not in _clients:
                try:
                    import redis
                except ImportError:
                    raise ConnectionError("the redis client is not installed: pip install 'scons-mlir-gpu[redis]'") from None
                _clients[key] = redis.Redis.from_url(self.url, password=self.password, socket_timeout=self.timeout,
                                                     socket_connect_timeout=self.timeout, retry_on_timeout=False,
                                                     **_client_version(redis))
            self.client = _clients[key]
        return self.client

    def _ask(self, request):
        """`request(client)`'s answer, or None after a fault (which opens the breaker)."""
        if self.breaker.is_open():
            return None
        try:
            return request(self._connection())
        except Exception as exc:  # noqa: BLE001 - the redis client's errors, timeouts, refused connections
            self._trip(exc)
            _forget_frames(exc)
            return None

    # Entries.

    def get(self, key):
        """The payload stored under `key`, or None (missing, damaged, or the server unavailable)."""
        return self.get_many([key])[0]

    def get_many(self, keys):
        """The payloads stored under `keys` (None for each missing or damaged one), in one round trip."""
        values = self._ask(lambda client: client.mget([_PREFIX + key for key in keys])) if keys else []
        payloads = []
        for key, data in zip(keys, values or [None] * len(keys)):
            payload = unseal(_PREFIX + key, data, self.secret) if isinstance(data, bytes) else None
            failed = isinstance(data, bytes) and payload is None
            self.counts["remote_rejected"] += failed
            if failed and (self.secret or not data.startswith(MAGIC + _KEYED)):
                self.rejected.add(key)
            else:
                self.rejected.discard(key)
            payloads.append(payload)
        hits = sum(payload is not None for payload in payloads)
        self.counts["remote_hits"] += hits
        self.counts["remote_misses"] += len(keys) - hits
        return payloads

    def put(self, key, payload):
        """Store `payload` (unless read-only); an entry already there is kept (its content is the same), unless
        its value failed the check here (another key's, another secret's, damaged: see `rejected`)."""
        if self.mode == "read":
            return
        value = seal(_PREFIX + key, payload, self.secret)
        keep = key not in self.rejected
        stored = self._ask(lambda client: client.set(_PREFIX + key, value, ex=self.ttl, nx=keep))
        if stored:
            self.counts["remote_stores"] += 1


def _head(name, payload, secret):
    """A value's head: the magic, the mode, and the HMAC-SHA256 of those, of the entry's Redis key `name` (its
    length first) and of its payload, so the value is valid under that key only."""
    head = MAGIC + (_KEYED if secret else _PUBLIC)
    named = name.encode("utf-8")
    message = head + len(named).to_bytes(8, "little") + named + payload
    return head + hmac.new(secret or _NO_SECRET, message, hashlib.sha256).digest()


def seal(name, payload, secret=None):
    """The value that stores `payload` under the Redis key `name`: the magic, the mode, the tag, the payload."""
    return _head(name, payload, secret) + payload


def unseal(name, data, secret=None):
    """The payload of `data` if it is the value sealed for `name` with `secret`, else None."""
    size = len(MAGIC) + 1 + _TAG
    payload = data[size:]
    return payload if hmac.compare_digest(data[:size], _head(name, payload, secret)) else None


def _port(parts):
    """The URL's port (default 6379); one outside 1 to 65535, or not a number, is an error naming the variable."""
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        text = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise CompileError(f"{VARIABLE}: port '{text[:40]}' is not a port (1 to 65535)",
                           fix="set it to e.g. redis://cache.example.org:6379/0")
    return port or 6379


def _forget_frames(exc):
    """Drop the tracebacks of `exc` and of the exceptions chained to it. The redis client's exceptions form
    reference cycles, and a traceback holds every frame of the stack it was raised in, the compile's with its LLVM
    modules: those would then be freed by a later garbage collection, at any point of another stage, which
    llvmlite's objects do not survive (a module freed while another is being walked crashes the process)."""
    seen = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending += [current.__cause__, current.__context__]


def shown(url):
    """`url` without its password, for messages."""
    with contextlib.suppress(ValueError):
        parts = urllib.parse.urlsplit(url)
        if parts.password:
            return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")))
    return url[:200]


def _client_version(redis):
    """The client's version, given rather than looked up: redis-py asks importlib.metadata for it on every
    connection it makes (5 ms of each worker's first compile). redis-py 8 takes it as `driver_info`."""
    if hasattr(redis, "DriverInfo"):
        return {"driver_info": redis.DriverInfo(lib_version=redis.__version__)}
    return {"lib_version": redis.__version__}


def preload():
    """Import the redis client now when a remote cache is named (it takes 0.1 s: redis-py imports asyncio): a
    zygote does it once for every worker it forks, before their first compiles wait for it."""
    if environment.value(VARIABLE):
        import encodings.idna  # noqa: F401 - what connecting to a host name imports, in each worker otherwise

        with contextlib.suppress(ImportError):
            import redis  # noqa: F401


def configured(breaker_path, warn):
    """The remote tier `$MLIRGPU_REMOTE_CACHE` names, telling `warn` of its faults, or None."""
    url = environment.value(VARIABLE)
    if not url:
        return None
    secret = environment.value("MLIRGPU_REMOTE_CACHE_SECRET")
    return RemoteTier(url, breaker_path, environment.value("MLIRGPU_REMOTE_CACHE_PASSWORD"),
                      environment.value("MLIRGPU_REMOTE_CACHE_TIMEOUT"),
                      secret.encode("utf-8", "surrogateescape") if secret is not None else None, warn)
