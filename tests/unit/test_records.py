"""The record and the depfile (mlirgpu.pipeline.record). The one reading of a previous compile's record
(`listed_dumps`): which dump files it lists, for the next compile, SCons's clean and the Dask client, which remove
what a compile no longer writes. A name that is no plain file name (a path, `..`, a hidden file) is never
returned, so a damaged or hostile record removes nothing outside its folder. The checked reading for the reports
(`read_record`) refuses such a record with an error naming it. A depfile reads back as it was written, whatever
the paths hold."""
import json

import pytest

from mlirgpu import CompileError
from mlirgpu.pipeline.record import SCHEMA, listed_dumps, make_depfile, parse_depfile, read_listed_dumps, read_record


def record(source="k.mlir", dumps=("k.isa", "k.cubin")):
    return json.dumps({"source": source, "dumps": list(dumps)})


def test_the_dumps_of_a_record_of_this_source():
    assert listed_dumps(record(), "k.mlir") == ["k.isa", "k.cubin"]
    assert listed_dumps(record()) == ["k.isa", "k.cubin"]  # no source asked: every record's own


def test_a_record_of_another_source_lists_nothing_of_ours():
    assert listed_dumps(record(source="other.mlir"), "k.mlir") == []


def test_names_that_are_not_plain_file_names_are_never_listed():
    hostile = ["../outside", "/etc/passwd", "", ".", "..", ".hidden", "sub/k.isa", 7, None, "k.isa"]
    assert listed_dumps(record(dumps=hostile), "k.mlir") == ["k.isa"]


def test_damaged_records_list_nothing(tmp_path):
    for text in ("", "{", "[]", "7", json.dumps({"source": "k.mlir", "dumps": "k.isa"}), "\udcff"):
        assert listed_dumps(text, "k.mlir") == []
    assert read_listed_dumps(str(tmp_path / "missing.json")) == []
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe")
    assert read_listed_dumps(str(tmp_path / "bad.json")) == []
    (tmp_path / "good.json").write_text(record())
    assert read_listed_dumps(str(tmp_path / "good.json"), "k.mlir") == ["k.isa", "k.cubin"]


def test_the_reports_read_a_record_only_whole_and_in_its_own_folder(tmp_path):
    job = {"module": "k", "target": "nvvm", "chip": "sm_80", "stem": "k", "features": "", "opt_level": 2,
           "dumps": ["k.isa"]}
    good = {"schema": SCHEMA, "jobs": [job], "dumps": ["k.isa", "repro.sh"], "options": {}, "binaries": [],
            "warnings": []}
    path = tmp_path / "mlirgpu.json"
    path.write_text(json.dumps(good))
    assert read_record(str(path)) == good
    for broken in ({**good, "schema": "other"}, {**good, "dumps": ["../k.isa"]}, {**good, "jobs": [{**job, "dumps":
                   ["other.isa"]}]}, {**good, "jobs": [{**job, "opt_level": "2"}]}, {**good, "warnings": None}, []):
        path.write_text(json.dumps(broken))
        with pytest.raises(CompileError, match="not a usable mlirgpu record") as caught:
            read_record(str(path))
        assert caught.value.file == str(path)
    path.write_bytes(b"{")
    with pytest.raises(CompileError, match="not a usable mlirgpu record"):
        read_record(str(path))


def test_a_depfile_reads_back_as_written():
    paths = ["/src/k.mlir", "/lib/with space.bc", "/lib/hash#and$dollar.bc", "C:\\back\\slash.bc", "/a\\ b"]
    assert parse_depfile(make_depfile("out/k.o", paths)) == ("out/k.o", paths)
    assert parse_depfile(make_depfile("k o.o", [])) == ("k o.o", [])
    with pytest.raises(CompileError, match="a line break in a path"):
        make_depfile("k.o", ["/lib/line\nbreak.bc"])
