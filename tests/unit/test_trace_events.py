"""A compile's trace events held in columns (mlirgpu.util.trace.Events): each stage event comes back as the dict
it was made as, other events as given, in a small fraction of the memory the dicts take (issue 40: a file of
10,000 modules held 28 MB of stage events while its jobs ran)."""
import pickle
import tracemalloc
from types import SimpleNamespace

from mlirgpu.util import trace


def _job(index):
    return SimpleNamespace(source="/src/many.mlir", module=SimpleNamespace(name=f"m{index}"),
                           target=SimpleNamespace(name="nvvm"), chip="sm_80")


def _stage_events(count):
    outputs = ("define void @k() {}\n", None, {"cubin": b"x" * 10, "fatbin": b"y" * 3})
    return [trace.stage_event(_job(i // 4), ("initial.ll", "linked.ll", "opt.ll", "isa")[i % 4],
                              ("ran", "cached", "substituted")[i % 3], 1.7e9 + i, 0.0, outputs[i % 3])
            for i in range(count)]


def test_events_give_back_the_dicts_they_were_given():
    given = _stage_events(40)
    other = trace.compile_event("/src/many.mlir", 10, 1.7e9, 0.5, {"mlir-translate": [1, 0.1, "/bin/x"]})
    odd = dict(given[0], args=dict(given[0]["args"], extra=1))  # not a stage event's shape: kept as it is
    events = trace.Events([other]).extend(given)
    events += [odd]
    assert list(events) == [other, odd] + given
    assert len(events) == 42
    assert pickle.loads(pickle.dumps(events)) == events
    assert list(trace.Events(events)) == list(events)


def test_events_hold_a_stage_event_in_far_less_than_its_dict():
    given = _stage_events(4000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        as_dicts = [dict(event, args=dict(event["args"])) for event in given]
        dicts = tracemalloc.get_traced_memory()[0] - before
        del as_dicts
        before = tracemalloc.get_traced_memory()[0]
        events = trace.Events(given)
        columns = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(events) == 4000
    assert columns * 5 < dicts, (columns, dicts)
    assert columns / 4000 < 100, "more than 100 bytes an event"
