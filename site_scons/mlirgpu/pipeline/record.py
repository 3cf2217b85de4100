"""The record and the depfile: what a compile leaves beside its outputs for the tools that come after it.

The record (`mlirgpu.json` in the dump folder, `<prefix>mlirgpu.json` with a dump prefix) says what one compile
produced: its options, jobs (each with its dumps, where each stage's output came from, the stock-tool commands
that remake them, the binary stage's log, the libraries it linked), binaries and warnings. Schema
`scons-mlir-gpu/object-record`, version 1; users and CI tools read its JSON, so its fields only ever grow. The
compile builds it (`new_record`), the dump folder completes it with every file it wrote and that file's sha256,
so a copy restored from a cache can be checked (`complete_record`), and writes it last (`record_text`): a folder
holds a record only of a compile that finished. It is read back two ways: the dumps a previous record lists
(`listed_dumps`: the next compile, SCons's clean and a Dask client remove what a compile no longer writes), and
checked whole (`read_record`: the CI reports, mlirgpu.reports).

The depfile is Make's `output: dependencies`, as Ninja's and Meson's `depfile` read it: the compile writes it
(`make_depfile`); a Dask client parses the worker's (`parse_depfile`) to write its own.
"""
import hashlib
import json
import os
import re

from ..errors import CompileError
from ..util.fsutil import RECORD_INPUT, read_input
from . import stages
from .embed import section_for

SCHEMA = "scons-mlir-gpu/object-record"
VERSION = 1


def project_path(path):
    """`path` relative to the folder the compile runs in (the project), never absolute: records and reports
    are shared between machines and checkouts."""
    return os.path.relpath(os.path.abspath(path)).replace(os.sep, "/")


def new_record(source, options, jobs, binaries, warnings, obj, output, origins, substituted, commands, logs):
    """What one compile produced, without the files of its dump folder (`complete_record` adds those).
    `output`: the object's path, or None; `origins`, `substituted`, `commands`, `logs`: per job id, where each
    stage's output came from, the substitutes used, the repro commands and the binary stage's log."""
    folder = options.dump_dir
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "source": project_path(source),
        "object": {"size": len(obj), "sha256": hashlib.sha256(obj).hexdigest(),
                   "path": os.path.relpath(os.path.abspath(output), os.path.abspath(folder)).replace(os.sep, "/")
                   if output else None},
        "options": {"format": options.format, "layout": options.layout, "section": options.section,
                    "target": options.target, "chip": options.chip, "features": options.features,
                    "opt_level": options.opt_level, "host_code": options.host_code, "opts": options.opts},
        "jobs": [
            {"module": job.module.name, "target": job.target.name, "chip": job.chip, "opt_level": job.opt_level,
             "features": job.attr.features, "stem": job.stem,
             "dumps": [f"{options.dump_prefix}{job.stem}.{suffix}"
                       for suffix in stages.dump_suffixes(job.target, options.format, options.emit)],
             "stages": origins.get(job.id, {}),
             "substituted": {stage: project_path(path) for stage, path in substituted.get(job.id, {}).items()},
             "repro": commands.get(job.id, []),
             "log": logs.get(job.id, ""),
             "libraries": linked_libraries(job, options)}
            for job in jobs
        ],
        "substituted": any(substituted.values()),
        "binaries": [
            {"symbol": item.symbol, "module": item.module, "target": item.family, "chips": list(item.chips),
             "format": item.format, "section": section_for(item, options.layout, options.section),
             "size": len(item.data), "sha256": hashlib.sha256(item.data).hexdigest()}
            for item in binaries
        ],
        "warnings": [str(warning) for warning in warnings],
    }


def linked_libraries(job, options):
    """The libraries a job linked besides its target's own device libraries (-l / GPU_LINKLIBS files, then its
    attribute's link = [...] files, those for its target and chip): each one's path and sha256 (null when it
    could not be read), so the CI manifest names what each kernel linked and which build of it."""
    linked = []
    for path in job.target.codegen.user_libraries(job.attr, options.link_libs):
        try:
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            digest = None
        linked.append({"path": project_path(path), "sha256": digest})
    return linked


def complete_record(record, folder, hashes, prefix):
    """`record` with the files written in `folder` ({path: sha256}, the record itself not among them) and the
    dump prefix their names start with."""
    record["dumps"] = sorted(os.path.relpath(path, folder) for path in hashes)
    record["sha256"] = {os.path.relpath(path, folder): digest for path, digest in sorted(hashes.items())}
    record["dump_prefix"] = prefix
    return record


def record_text(record):
    """The record as its file holds it."""
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def record_without_origins(data):
    """A record's file (bytes) without each job's `stages` (ran, or came from the stage cache), which describes
    the run rather than what it made: so a build from a warm cache archives the same bytes as a cold one."""
    record = json.loads(data)
    for job in record.get("jobs", []):
        job.pop("stages", None)
    return record_text(record).encode("utf-8")


def _plain(name):
    """Whether `name` is a file name in the record's own folder (no path, never `.` or `..`)."""
    return isinstance(name, str) and name == os.path.basename(name) and name not in ("", ".", "..")


def listed_dumps(text, source=None):
    """The plain file names a record's `text` lists as its dumps: none for a damaged record, nor, with `source`,
    for a record of another source (a folder shared without --dump-prefix). The one reading of a previous record
    (the next compile, SCons's clean, a Dask client): names that are no plain file name, or hidden, are never
    returned."""
    try:
        record = json.loads(text)
        listed = record.get("dumps", []) if source is None or record.get("source") == source else []
    except (ValueError, AttributeError, TypeError):
        return []
    return [name for name in listed if _plain(name) and not name.startswith(".")] if isinstance(listed, list) else []


def read_listed_dumps(record_path, source=None):
    """`listed_dumps` of the record at `record_path` (none when there is no record)."""
    try:
        return listed_dumps(read_input(record_path, RECORD_INPUT).decode("utf-8"), source)
    except (CompileError, UnicodeDecodeError):
        return []


def read_record(record_path):
    """A record, checked: what it lists are plain names in its own folder, with the fields the reports read.
    Anything else is a CompileError naming the record (never a file outside its folder)."""
    def broken(why):
        return CompileError(f"not a usable mlirgpu record: {why}", file=record_path,
                            fix="rebuild the object with dumps on; records are written by mlirgpu compile")

    try:
        record = json.loads(read_input(record_path, RECORD_INPUT).decode("utf-8"))
    except ValueError as exc:
        raise broken(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise broken(f"no {SCHEMA} schema")
    try:
        jobs, dumps = record["jobs"], record["dumps"]
        assert isinstance(jobs, list) and isinstance(dumps, list) and all(_plain(name) for name in dumps)
        for job in jobs:
            assert all(isinstance(job[key], str) for key in ("module", "target", "chip", "stem", "features"))
            assert isinstance(job["opt_level"], int) and all(_plain(name) for name in job["dumps"])
            assert set(job["dumps"]) <= set(dumps)
        assert isinstance(record["options"], dict) and isinstance(record["binaries"], list)
        assert isinstance(record.get("dump_prefix", ""), str) and isinstance(record["warnings"], list)
        assert isinstance(record.get("sha256", {}), dict)
    except (AssertionError, KeyError, TypeError) as exc:
        raise broken(f"unexpected content ({type(exc).__name__} {exc})".replace(" ()", "")) from None
    return record


def make_depfile(output, dependencies):
    """A Make-style depfile (`output: deps`), as Ninja's and Meson's `depfile` read it."""
    def escape(path):
        if "\n" in path or "\r" in path:
            raise CompileError(f"cannot write a depfile naming '{path.strip()}': a line break in a path",
                               fix="rename the file")
        return path.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")

    return escape(output) + ": " + " \\\n  ".join(escape(path) for path in dependencies) + "\n"


_ESCAPED = {"\\ ": " ", "\\#": "#", "$$": "$", "\\\\": "\\"}


def parse_depfile(text):
    """(output, dependencies) of a depfile `make_depfile` wrote."""
    def plain(entry):
        return re.sub(r"\\[ #\\]|\$\$", lambda match: _ESCAPED[match.group(0)], entry)

    output, _, rest = text.partition(": ")
    entries = [plain(entry.strip()) for entry in rest.rstrip("\n").split(" \\\n  ")]
    return plain(output), [entry for entry in entries if entry]
