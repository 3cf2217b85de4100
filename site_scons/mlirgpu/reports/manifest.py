"""The CI manifest: one model of everything the GPU compiles produced, built from the per-object records
(`mlirgpu.json`, mlirgpu.pipeline.record) that every compile with dumps writes, so it serves SCons, the CLI or
any other build system. Each file a record lists is checked against the sha256 the compile wrote.

Manifest schema `scons-mlir-gpu/manifest`, version 1 (paths of files a record lists are relative to the
manifest's folder; `source` and the libraries' paths are as the records name them, relative to the folder the
compiles ran in):

    {"schema": ..., "version": 1, "toolchain": {name: version},
     "objects": [{"source", "record", "options": {...}, "warnings": [...],
                  "binaries": [{"symbol", "module", "target", "chips", "format", "section", "size", "sha256"}],
                  "jobs": [{"module", "target", "chip", "opt_level", "features",
                            "intermediates": {suffix: {"path", "sha256"}}, "substituted": {stage: path},
                            "log": the binary stage's tool output,
                            "libraries": [{"path", "sha256", "source": the library's source, or null}],
                            "kernels": [{"name", "registers", "spills", "shared_bytes", "local_bytes", ...}]}]}],
     "libraries": [{"source", "record", "options", "warnings",
                    "files": [{"path", "target", "chip", "modules", "size", "sha256"}],
                    "jobs": [as an object's, without kernels], "other_files"}]}

Each target adds fields of its own to its kernels (its `kernel_resources` hook says which); `toolchain` holds
the identity (version and sha256) of every tool that shaped the outputs. A device-function library
(`env.GpuLibrary`, `--emit library`) is an entry of `libraries`; each job of an object or library names the
libraries it linked, with the source of the one this manifest holds that built the file.
"""
import hashlib
import os

from ..errors import CompileError
from ..pipeline.record import read_record
from ..targets import TARGETS

SCHEMA = "scons-mlir-gpu/manifest"
VERSION = 1
METRICS = ("registers", "spills", "shared_bytes", "local_bytes")


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _rel(path, root):
    return os.path.relpath(path, root).replace(os.sep, "/")


def _kernels(job, dump_dir, options, toolkit, prefix, record_path):
    """Each kernel's resources, as the job's target reads them from its dumps or tool logs."""
    target = TARGETS.get(job["target"])
    if target is None:
        raise CompileError(f"the record names target '{job['target']}', which is not registered", file=record_path,
                           fix="set MLIRGPU_TARGETS to the module that defines it")
    return target.outputs.kernel_resources(job, os.path.join(dump_dir, f"{prefix}{job['stem']}.isa"), options, toolkit)


def _checked_sha256(path, record, name, record_path):
    """The file's sha256, which must equal the record's: a file changed after the compile, or restored
    damaged from a build cache, is an error rather than a wrong manifest."""
    try:
        digest = _sha256(path)
    except OSError as exc:
        raise CompileError(f"cannot read '{name}' that the record lists: {exc.strerror}", file=record_path,
                           fix="rebuild the object") from None
    expected = record.get("sha256", {}).get(name)
    if expected is not None and expected != digest:
        raise CompileError(f"'{name}' differs from what the compile wrote (changed since, or restored damaged "
                           "from a cache)", file=record_path, fix="rebuild the object")
    return digest


def _check_object(record, dump_dir, record_path):
    """The object beside the record must be the one the compile wrote (a build cache may restore both)."""
    obj = record.get("object") or {}
    if not isinstance(obj, dict) or not isinstance(obj.get("path"), str) or not isinstance(obj.get("sha256"), str):
        return
    path = os.path.normpath(os.path.join(dump_dir, obj["path"]))
    if os.path.isfile(path) and _sha256(path) != obj["sha256"]:
        raise CompileError(f"the object '{obj['path']}' differs from what the compile wrote (changed since, or "
                           "restored damaged from a cache)", file=record_path, fix="rebuild the object")


def build_manifest(record_paths, root, versions, toolkit=""):
    """The manifest (a dict) for the compiles whose records are `record_paths`, paths relative to `root`:
    objects, and device-function libraries (a record with `libraries`: no kernels, nothing embedded)."""
    objects, libraries = [], []
    for record_path in sorted(record_paths, key=lambda p: _rel(p, root)):
        record = read_record(record_path)
        library = "libraries" in record
        entry = _entry(record, record_path, root, toolkit, kernels=not library)
        if library:
            entry["files"] = record["libraries"]
            libraries.append(entry)
        else:
            _check_object(record, os.path.dirname(record_path), record_path)
            entry["binaries"] = record["binaries"]
            objects.append(entry)
    built = {item["path"]: library["source"] for library in libraries for item in library["files"]}
    for entry in objects + libraries:
        for job in entry["jobs"]:
            for item in job["libraries"]:
                item["source"] = built.get(item["path"])
    return {"schema": SCHEMA, "version": VERSION, "toolchain": versions, "objects": objects, "libraries": libraries}


def _entry(record, record_path, root, toolkit, kernels):
    """What an object and a library share in the manifest: source, record, options, warnings, the jobs (their
    dumps checked against the record, the libraries they linked, and with `kernels` each kernel's resources),
    and the dump folder's other files."""
    dump_dir = os.path.dirname(record_path)
    prefix = record.get("dump_prefix", "")
    jobs = []
    for job in record["jobs"]:
        intermediates = {}
        for name in job["dumps"]:
            path = os.path.join(dump_dir, name)
            suffix = name[len(prefix) + len(job["stem"]) + 1:]
            intermediates[suffix] = {"path": _rel(path, root),
                                     "sha256": _checked_sha256(path, record, name, record_path)}
        found = {key: job[key] for key in ("module", "target", "chip", "opt_level", "features")} | {
            "intermediates": intermediates, "substituted": _substituted(job),
            "log": job.get("log") if isinstance(job.get("log"), str) else "", "libraries": _linked(job)}
        if kernels:
            found["kernels"] = _kernels(job, dump_dir, record["options"], toolkit, prefix, record_path)
        jobs.append(found)
    extra = sorted(set(record["dumps"]) - {n for job in record["jobs"] for n in job["dumps"]})
    return {"source": record["source"], "record": _rel(record_path, root), "options": record["options"],
            "warnings": record["warnings"], "jobs": jobs,
            "other_files": [{"path": _rel(os.path.join(dump_dir, n), root),
                             "sha256": _checked_sha256(os.path.join(dump_dir, n), record, n, record_path)}
                            for n in extra]}


def _linked(job):
    """The libraries the job linked ({path, sha256}), from a record of any version (older ones name none)."""
    found = job.get("libraries")
    return [{"path": str(item.get("path")), "sha256": item.get("sha256")} for item in found
            if isinstance(item, dict)] if isinstance(found, list) else []


def compiles(manifest):
    """Every entry of the manifest with dumps: its objects, then its libraries (a manifest of any version)."""
    return manifest["objects"] + manifest.get("libraries", [])


def _substituted(job):
    """The job's substituted stages ({stage: substitute path}), from a record of any version."""
    found = job.get("substituted") or {}
    return {str(stage): str(path) for stage, path in found.items()} if isinstance(found, dict) else {}


def substituted_stages(manifest):
    """One line per stage whose output was a hand-edited substitute (a CI gate refuses such builds)."""
    return [f"{obj['source']} @{job['module']} {job['target']} {job['chip']}: {stage} from {path}"
            for obj in manifest["objects"] for job in obj["jobs"]
            for stage, path in sorted(job.get("substituted", {}).items())]


def kernel_rows(manifest):
    """{(source, module, target, chip, kernel): kernel dict} over the whole manifest."""
    rows = {}
    for obj in manifest["objects"]:
        for job in obj["jobs"]:
            for kernel in job["kernels"]:
                rows[(obj["source"], job["module"], job["target"], job["chip"], kernel["name"])] = kernel
    return rows


def manifest_files(manifest):
    """Every file the manifest lists (paths relative to its folder)."""
    names = []
    for obj in compiles(manifest):
        names.append(obj["record"])
        names += [item["path"] for item in obj["other_files"]]
        for job in obj["jobs"]:
            names += [item["path"] for item in job["intermediates"].values()]
    return names


def kernel_label(key):
    """A kernel's key from `kernel_rows` (or a job's, without the kernel) as one line:
    `<source> @<module> <target> <chip> [<kernel>]`."""
    return " ".join([key[0], f"@{key[1]}", f"{key[2]} {key[3]}"] + ([key[4]] if len(key) > 4 else []))
