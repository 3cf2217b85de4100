"""The reproducible archive of a build's GPU artifacts: the reports, the manifest and every file it lists, sorted,
with fixed times and owners, and names that unpack anywhere as a whole.
"""
import gzip
import io
import json
import os
import posixpath
import tarfile

from ..pipeline.record import record_without_origins
from .manifest import compiles, manifest_files


def write_archive(members):
    """A reproducible .tar.gz of `members` ({member name: bytes}): sorted, fixed times and owners."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed:
        with tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name in sorted(members):
                data = members[name]
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def archive_members(manifest, out_dir, names):
    """{member name: bytes}: the reports, the manifest and every file it lists (objects' and libraries'). A file
    inside the output folder keeps its path; one outside it (dumps elsewhere) goes to `outside/<n>-<folder>/`, and
    the archive's copy of the manifest names it there, so no member name holds `..` or an absolute path and the
    archive unpacks anywhere as a whole."""
    mapping, folders = {}, {}
    for path in manifest_files(manifest):
        if path.startswith("../") or path == ".." or os.path.isabs(path):
            folder, name = posixpath.split(path)
            index = folders.setdefault(folder, len(folders))
            mapping[path] = f"outside/{index}-{posixpath.basename(folder) or 'root'}/{name}"
        else:
            mapping[path] = path
    records = {obj["record"] for obj in compiles(manifest)}
    members = {}
    for path, member in mapping.items():
        with open(os.path.join(out_dir, path), "rb") as handle:
            members[member] = record_without_origins(handle.read()) if path in records else handle.read()
    archived = json.loads(json.dumps(manifest))
    for obj in compiles(archived):
        obj["record"] = mapping[obj["record"]]
        for item in obj["other_files"]:
            item["path"] = mapping[item["path"]]
        for job in obj["jobs"]:
            for item in job["intermediates"].values():
                item["path"] = mapping[item["path"]]
    members[names["manifest"]] = (json.dumps(archived, indent=2, sort_keys=True) + "\n").encode("utf-8")
    for kind in ("markdown", "html"):
        with open(os.path.join(out_dir, names[kind]), "rb") as handle:
            members[names[kind]] = handle.read()
    return members
