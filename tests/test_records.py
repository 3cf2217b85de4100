"""The one reading of a previous compile's record (mlirgpu.pipeline.dumps.listed_dumps): which dump files it lists, for
the next compile, SCons's clean and the Dask client, which remove what a compile no longer writes. A name that is
no plain file name (a path, `..`, a hidden file) is never returned, so a damaged or hostile record removes
nothing outside its folder."""
import json

from mlirgpu.pipeline.dumps import listed_dumps, read_listed_dumps


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
