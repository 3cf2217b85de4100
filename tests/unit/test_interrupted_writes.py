"""Ctrl-C at any moment of an atomic write leaves the old file and no temp file (the next build would otherwise
find a `.NAME.mlirgpu-tmp-*` that nothing declared), and a worker gives its compile up once: a second SIGINT,
its caller's after a terminal's, does not cut short the clean-up the first began."""
import os
import signal

import pytest

from mlirgpu.execution import worker
from mlirgpu.util import fsutil


def _left(folder):
    return sorted(os.listdir(folder))


def _interrupt_after(function):
    def interrupted(*args, **kwargs):
        function(*args, **kwargs)
        raise KeyboardInterrupt

    return interrupted


@pytest.mark.parametrize("where", ["open", "write", "replace"])
def test_an_interrupted_write_leaves_the_old_file_and_no_temp_file(where, tmp_path, monkeypatch):
    """The interrupt as `os.open` has created the temp file (before its descriptor is named in Python), in the
    middle of the write, and as the rename would begin."""
    target = tmp_path / "k.isa"
    target.write_bytes(b"from an earlier build")
    write = lambda handle: handle.write(b"new")  # noqa: E731
    if where == "open":
        monkeypatch.setattr(fsutil.os, "open", _interrupt_after(os.open))
    elif where == "write":
        write = _interrupt_after(write)
    else:
        monkeypatch.setattr(fsutil.os, "replace", lambda *args: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        fsutil.write_atomic_with(str(target), write)
    monkeypatch.undo()
    assert _left(tmp_path) == ["k.isa"]
    assert target.read_bytes() == b"from an earlier build"


def test_a_worker_gives_its_compile_up_once():
    previous = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            worker._interrupted_once(signal.SIGINT, None)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
