"""Finding the external tools and libraries, their identities, and install hints when one is missing.

Search order, first hit wins (no other absolute paths are assumed). The variables are read from a search
environment: a build tool's own execution environment first (SCons's `env['ENV']`), then this process's.
- MLIR tools (`mlir-opt`, `mlir-translate`): `$MLIR_BIN`, then `mlir-opt-22` / `mlir-opt` on PATH, then Debian's
  `/usr/lib/llvm-22/bin` (package mlir-22-tools).
- LLVM tools (`llvm-mc`, `ld.lld`): `$LLVM_BIN`, PATH (`llvm-mc-22`, `ld.lld-22`, then unversioned), then
  `/usr/lib/llvm-22/bin` (packages llvm-22, lld-22).
- Vendor toolkits (CUDA, ROCm) are found by the targets that use them (mlirgpu.targets.cuda, .rocm), through the
  same search environment.

What a tool prints (`--version`, processor lists) and the hash of its bytes are cached on disk per tool file,
keyed by its identity on disk including the inode and change time, which `cp -p`, `rsync -a` and `tar x` cannot
keep: a tool replaced or upgraded in place is read again.
"""
import functools
import hashlib
import os
import re
import stat
import shutil
import subprocess
import threading

from ..cache import store
from ..errors import ToolMissing
from ..version import llvmlite_library  # the LLVM library the stages run in, found without loading it

LLVM_MAJOR = 22
_expected_llvm_major = LLVM_MAJOR  # what llvmlite must bundle in this process (expect_llvm_major)
DEBIAN_LLVM_BIN = f"/usr/lib/llvm-{LLVM_MAJOR}/bin"
SEARCH_VARIABLES = ["PATH", "MLIR_BIN", "LLVM_BIN"]  # vendor toolkits add theirs (search_also)


def expect_llvm_major(major):
    """The LLVM major llvmlite must bundle in this process: a worker's caller says which its MLIR tools are.
    mlirgpu.llvm.ops checks it when it loads LLVM."""
    global _expected_llvm_major
    _expected_llvm_major = major


def expected_llvm_major():
    return _expected_llvm_major


def search_also(*names):
    """Environment variables a toolkit's discovery reads (e.g. CUDA_PATH), so they are in the search
    environment a build passes on."""
    SEARCH_VARIABLES.extend(name for name in names if name not in SEARCH_VARIABLES)

INSTALL = {
    "mlir": f"apt install mlir-{LLVM_MAJOR}-tools (Debian 12's security suite or Debian 13 have it) or set MLIR_BIN "
            "to the folder holding mlir-opt",
    "llvm": f"apt install llvm-{LLVM_MAJOR} (Debian 12's security suite or Debian 13) or set LLVM_BIN to its folder",
    "lld": f"apt install lld-{LLVM_MAJOR} (Debian 12's security suite or Debian 13) or set LLVM_BIN to its folder",
}
_PACKAGE_OF = {"mlir-opt": "mlir", "mlir-translate": "mlir", "llvm-mc": "llvm", "ld.lld": "lld"}


def search_environment(overrides=None):
    """The variables tool discovery reads, as a hashable tuple: `overrides` (a build's execution environment)
    first, then this process's environment; PATH is the overrides' PATH followed by this process's."""
    values = []
    for name in SEARCH_VARIABLES:
        own = (overrides or {}).get(name)
        here = os.environ.get(name)
        if name == "PATH":
            value = os.pathsep.join(part for part in (own, here) if part)
        else:
            value = own if own else here
        values.append((name, value or ""))
    return tuple(values)


def _env(environment):
    return dict(environment if environment is not None else search_environment())


def which(name, environment):
    """`name` on the search environment's PATH, or None."""
    return shutil.which(name, path=_env(environment)["PATH"] or None)


def executable(path):
    """`path` when it is an executable file, else None."""
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


_FINDERS = []  # the searches `forget` clears


def finder(search):
    """`search` (a look through this machine's folders for a tool or toolkit, by hashable arguments) remembered
    per arguments once it finds something, until `forget`. A search that found nothing (None, or ToolMissing) is
    done again next time: a toolkit installed while a compile server and its workers live is found by the next
    compile, instead of the error that told the user to install it."""
    found = {}

    @functools.wraps(search)
    def remembered(*args):
        if args not in found:
            result = search(*args)
            if result is None:
                return None
            found[args] = result
        return found[args]

    remembered.cache_clear = found.clear
    _FINDERS.append(remembered)
    return remembered


def llvm_tool(name, environment=None):
    """Absolute path of an MLIR/LLVM tool of the pinned major version."""
    return _llvm_tool(name, environment if environment is not None else search_environment())


@finder
def _llvm_tool(name, environment):
    env = dict(environment)
    variable = "MLIR_BIN" if name.startswith("mlir") else "LLVM_BIN"
    unversioned = which(name, environment)
    candidates = [os.path.join(env[variable], name)] if env[variable] else []
    candidates += [which(f"{name}-{LLVM_MAJOR}", environment), os.path.join(DEBIAN_LLVM_BIN, name), unversioned]
    for candidate in candidates:
        found = executable(candidate)
        if found and (candidate != unversioned or _major_of(found) == LLVM_MAJOR):
            return found
    package = _PACKAGE_OF.get(name, "llvm")
    raise ToolMissing(f"{name} (LLVM {LLVM_MAJOR}) not found", fix=INSTALL[package])


def command(name, environment=None):
    """An MLIR/LLVM tool as a command a person runs later names it (repro.sh): its path where found, else its name
    with the pinned version (`llc-22`), looked up when the command runs. A compile that writes such a command but
    never runs the tool does not fail for want of it."""
    try:
        return llvm_tool(name, environment)
    except ToolMissing:
        return f"{name}-{LLVM_MAJOR}"


def found(*searches):
    """The tools `searches` (functions giving a path, or raising ToolMissing) find, those not found left out: what
    a signature or cache key is made of (the step that runs a missing tool reports it)."""
    paths = []
    for search in searches:
        try:
            paths.append(search())
        except ToolMissing:
            continue
    return [path for path in paths if path]


def _major_of(tool):
    match = re.search(r"LLVM version (\d+)", tool_output(tool, ("--version",)) or "")
    return int(match.group(1)) if match else None


def _stat_key(path):
    """What identifies a file's bytes without reading them: the file `path` leads to (device and inode, so every
    link to one file shares its facts, without resolving each folder of the path) and its size, modification and
    change times (a replaced or rewritten file gets a new one, whatever its modification time says)."""
    info = os.stat(path)
    return f"{info.st_dev}|{info.st_ino}|{info.st_size}|{info.st_mtime_ns}|{info.st_ctime_ns}"


def _tool_cache():
    """The facts file. Facts describe this machine's files (keyed by their identity, see `_stat_key`), not what
    a compile made, so all cache folders of a user share them: a checkout with its own MLIRGPU_CACHE_DIR hashes
    no tool again. They live in the user's cache folder where it can be written, else in the cache folder."""
    root = store.user_cache_root()
    existing = root
    while not os.path.lexists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)  # the nearest path there is decides whether `root` can be made
    if not (os.path.isdir(existing) and os.access(existing, os.W_OK | os.X_OK)):
        root = store.cache_root()
    return os.path.join(root, "tools.json")


_tool_memory = {}
_read_from = {}  # facts file -> its (size, mtime) when this process (or the server it forked from) read it whole


def _file_version(path):
    try:
        info = os.stat(path)
        return info.st_size, info.st_mtime_ns
    except OSError:
        return None


def _cached(key, compute):
    """`compute()` remembered in this process and on disk under `key` (None results are not kept). The file is
    read whole, and again only when it changed since (a compile asks for dozens of facts: every device
    library's digest; other processes add facts to it). Threads may ask at once (see `identities`): one
    computes a fact while the others asking for it wait, and the file is read and written by one at a time."""
    if key in _tool_memory:
        return _tool_memory[key]
    path = _tool_cache()
    with _facts_lock:
        _refresh(path)
        if key in _tool_memory:
            return _tool_memory[key]
        computing = _computing.get(key)
        if computing is None:
            _computing[key] = threading.Event()
    if computing is not None:  # another thread computes it (hashing the same tool twice would only cost twice)
        computing.wait()
        return _tool_memory.get(key)
    try:
        value = compute()
        if value is None:
            return None
        with _facts_lock:
            known = store.read_json(path)  # again: other processes may have added facts since
            known = known if isinstance(known, dict) else {}
            known[key] = value
            store.write_json(path, known)
            _tool_memory[key] = value
        return value
    finally:
        with _facts_lock:
            _computing.pop(key).set()


def _refresh(path):
    """Read the facts file again if it changed since this process last read it (under _facts_lock)."""
    version = _file_version(path)
    if version is not None and _read_from.get(path) != version:
        _read_from[path] = version
        known = store.read_json(path)
        if isinstance(known, dict):
            _tool_memory.update((k, v) for k, v in known.items() if isinstance(v, str))


def _known(key):
    """Whether fact `key` is at hand, without computing it."""
    if key not in _tool_memory:
        with _facts_lock:
            _refresh(_tool_cache())
    return key in _tool_memory


_facts_lock = threading.Lock()
_computing = {}  # fact key -> set when the thread computing it is done


def file_fact(path, kind, compute):
    """`compute()` (a str) remembered per identity of the file at `path` (see `_stat_key`), or None."""
    try:
        key = f"{kind}|{_stat_key(path)}"
    except OSError:
        return None
    return _cached(key, compute)


def _output_key(tool, args):
    return f"output|{_stat_key(tool)}|{' '.join(args)}"


def _digest_key(path):
    return f"sha256|{_stat_key(path)}"


def tool_output(tool, args):
    """What `TOOL ARGS...` prints (stdout then stderr), or None when it cannot run; cached per tool file."""
    try:
        key = _output_key(tool, args)
    except OSError:
        return None

    def run():
        from .process import bounded, timeout

        try:  # a version or help text comes at once: within 10 s, or the tool time limit when that is shorter
            result = bounded([tool, *args], min(10, timeout()))
        except subprocess.TimeoutExpired:
            return ""  # remembered as printing nothing: a tool that hangs is not asked again (its file is known)
        except (OSError, subprocess.SubprocessError):
            return None
        return (result.stdout + result.stderr).decode("utf-8", "replace")

    return _cached(key, run)


def file_digest(path):
    """sha256 of a file's bytes, cached per file identity (tools are read once after each change); only a
    regular file is read (a FIFO or device would block or never end)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "not a regular file"
        key = _digest_key(path)
    except OSError:
        return "missing"

    def digest():
        hasher = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                hasher.update(block)
        return hasher.hexdigest()

    return _cached(key, digest)


def tool_version(tool):
    """First line of `TOOL --version` that names a version."""
    out = tool_output(tool, ("--version",))
    return "unknown" if out is None else _version_line(out)


@functools.lru_cache(maxsize=64)
def _version_line(out):
    """The line of a `--version` text that names the version: found once per text (stage keys ask for it per job
    and stage, and `llc --version` lists some fifty targets)."""
    lines = [line.strip() for line in out.splitlines() if re.search(r"[Vv]ersion|release", line)]
    return lines[0] if lines else (out.strip().splitlines()[0] if out.strip() else "unknown")


def identity(tool):
    """A tool's identity for signatures and records: its version line and the hash of its bytes."""
    return f"{tool_version(tool)} [{file_digest(tool)[:16]}]"


def identities_known(tools, llvmlite=False):
    """Whether `identities(tools, llvmlite)` would compute nothing (every fact at hand)."""
    try:
        return all(_known(_output_key(tool, ("--version",))) and _known(_digest_key(tool)) for tool in tools) and \
            (not llvmlite or not llvmlite_library() or _known(_digest_key(llvmlite_library())))
    except OSError:
        return False  # a missing file: `identity` says so


def identities(tools, llvmlite=False):
    """{tool: identity(tool)} (and llvmlite's under "llvmlite" when asked), computed side by side: the first
    time on a machine (or with a new cache folder) that reads some hundred megabytes and runs each tool's
    `--version`, which wait on the disk, on hashing that releases Python's lock, and on other processes."""
    asks = [(tool, functools.partial(identity, tool)) for tool in tools]
    if llvmlite:
        asks.append(("llvmlite", llvmlite_identity))
    if len(asks) < 2 or identities_known(tools, llvmlite):
        return {name: ask() for name, ask in asks}
    from concurrent.futures import ThreadPoolExecutor  # 5 ms to import: only for the first time on a machine

    with ThreadPoolExecutor(len(asks)) as pool:
        return dict(zip((name for name, _ask in asks), pool.map(lambda ask: ask[1](), asks)))


def llvmlite_identity():
    """llvmlite's release and the hash of its LLVM library (the stages' LLVM)."""
    library = llvmlite_library()
    return f"llvmlite {_llvmlite_release()} [{file_digest(library)[:16] if library else 'missing'}]"


@functools.cache
def _llvmlite_release():
    """The installed llvmlite's version. Importing the package loads no LLVM (that is `llvmlite.binding`) and
    takes well under a millisecond; `importlib.metadata` would cost a build tool's process 35 ms."""
    try:
        import llvmlite

        return llvmlite.__version__
    except Exception:  # noqa: BLE001 - an unusual install: the library's hash still tells
        return "unknown"


def forget():
    """Drop what was found (a worker does this when its caller's environment changed)."""
    for cached in _FINDERS:
        cached.cache_clear()
