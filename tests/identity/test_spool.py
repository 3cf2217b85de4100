"""A file of many modules compiled to an object: the stage runners spool the embedded binaries and the object is
copied from the spool (mlirgpu.pipeline.spool), byte for byte the object of the same compile held in memory;
nothing is left behind, also when writing the object fails."""
import glob
import os
import sys
import tempfile

import pytest

from corpusutil import ROOT
from mlirgpu import CompileOptions
from mlirgpu.errors import CompileError
from mlirgpu.execution import fanout
from mlirgpu.llvm.mlirtools import translate_pieces
from mlirgpu.pipeline import driver, jobrunner, spool
from mlirgpu.pipeline.planning import check_options
from mlirgpu.pipeline.scan import direct_source

sys.path.insert(0, os.path.join(ROOT, "bench"))
from many_modules import write_many  # noqa: E402 - the benchmark's generator


@pytest.fixture
def private_temp(tmp_path, monkeypatch):
    """This test's own temp folder (the spool's folder is made there), and stage runners forked as in a build."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    monkeypatch.setenv("MLIRGPU_COMPILE_PROCESSES", "2")
    return folder


@pytest.mark.parametrize("fmt", ["isa", "bin"])
def test_spooled_object_is_the_object_held_in_memory(tmp_path, private_temp, cuda_root, monkeypatch, fmt):
    source = write_many(str(tmp_path / "many.mlir"), fanout.MIN_JOBS + 3)
    options = check_options(source, CompileOptions(format=fmt, toolkit=cuda_root))
    # no object file: the binaries and the object in memory
    held = driver.compile_source(source, options, runner=fanout.FORKED)
    written = []
    real = spool.ObjectParts.write_to
    monkeypatch.setattr(spool.ObjectParts, "write_to", lambda self, handle: written.append(
        sum(isinstance(part, spool.Spooled) for part in self.parts)) or real(self, handle))
    result = driver.compile_to_object(source, str(tmp_path / "many.o"), options, runner=fanout.FORKED)
    assert written == [fanout.MIN_JOBS + 3], "the object was not copied from the runners' spool"
    assert (tmp_path / "many.o").read_bytes() == held.object_bytes
    assert [item.data for item in result.binaries] == [b""] * len(held.binaries)  # not sent back to the caller
    assert [item.symbol for item in result.binaries] == [item.symbol for item in held.binaries]
    assert os.listdir(private_temp) == [], "the spool or the scratch folder was left behind"


def test_a_spool_that_fails_leaves_no_object(tmp_path, private_temp, cuda_root, monkeypatch):
    source = write_many(str(tmp_path / "many.mlir"), fanout.MIN_JOBS)
    options = check_options(source, CompileOptions(format="isa", toolkit=cuda_root))
    output = tmp_path / "many.o"
    real = spool.ObjectParts.write_to

    def truncated(self, handle):  # a spool file cut short (a full disk) while the object is written
        path = next(part.path for part in self.parts if isinstance(part, spool.Spooled))
        os.truncate(path, 10)
        real(self, handle)

    monkeypatch.setattr(spool.ObjectParts, "write_to", truncated)
    with pytest.raises(CompileError, match="cannot write"):
        driver.compile_to_object(source, str(output), options, runner=fanout.FORKED)
    assert not output.exists() and glob.glob(str(tmp_path / ".many.o*")) == []
    assert os.listdir(private_temp) == []


def test_compiles_that_need_the_bytes_do_not_spool(tmp_path, private_temp, cuda_root, monkeypatch):
    """With dumps the record hashes every binary and the object: the object is held in memory, as before."""
    source = write_many(str(tmp_path / "many.mlir"), fanout.MIN_JOBS)
    options = check_options(source, CompileOptions(format="isa", toolkit=cuda_root, dump_dir=str(tmp_path / "D")))
    monkeypatch.setattr(spool.ObjectParts, "write_to", lambda self, handle: pytest.fail("spooled with dumps"))
    driver.compile_to_object(source, str(tmp_path / "many.o"), options, runner=fanout.FORKED)
    assert (tmp_path / "many.o").read_bytes()[:4] == b"\x7fELF"


def test_the_jobs_read_their_llvm_ir_from_the_spool(tmp_path, private_temp, cuda_root, monkeypatch):
    """The compile's process keeps no translation in memory while the runners work: they read each module's
    LLVM IR from a file in the spool's folder, the same text the translation gave."""
    source = write_many(str(tmp_path / "many.mlir"), fanout.MIN_JOBS)
    options = check_options(source, CompileOptions(format="isa", toolkit=cuda_root))
    given = []
    real = jobrunner.run_jobs
    monkeypatch.setattr(jobrunner, "run_jobs", lambda compile_, jobs, irs, dumps: given.append(
        (irs, dict(irs))) or real(compile_, jobs, irs, dumps))
    driver.compile_to_object(source, str(tmp_path / "many.o"), options, runner=fanout.FORKED)
    (irs, text), = given
    assert isinstance(irs, spool.Translations), "the runners were given the translations in memory"
    loaded = direct_source(source, options)
    assert text == dict(zip([m.name for m in loaded.modules], translate_pieces([m.text for m in loaded.modules],
                                                                                source, lambda warning: None)))
    assert os.listdir(private_temp) == []


def test_translations_in_a_file_read_back_as_written(tmp_path):
    irs = {"a": "; ModuleID = 'a'\n", "b": "", "c": "; é ü 字\n" * 3}
    translations = spool.Translations(str(tmp_path), irs)
    assert dict(translations) == irs and list(translations) == ["a", "b", "c"] and len(translations) == 3
    with pytest.raises(KeyError):
        translations["d"]  # noqa: B018


def test_translations_that_cannot_be_written_stay_in_memory(tmp_path, monkeypatch):
    """A full disk or `ulimit -f` while writing them: the compile keeps them in memory, leaving no file."""
    irs = {"a": "; ModuleID = 'a'\n" * 100}
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: _FullDisk(fd))
    spooling = spool.Spool()
    spooling.folder = str(tmp_path)
    assert spooling.translations(irs) is irs
    assert os.listdir(tmp_path) == []


class _FullDisk:
    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)

    def write(self, data):
        raise OSError(28, "No space left on device")
