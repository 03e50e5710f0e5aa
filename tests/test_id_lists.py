"""bpe_cffi.id_lists: lists of ids from int32 arrays, by every way it has, against tolist()."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_cffi import id_lists
from bpe_cffi.id_lists import IdLists

WAYS = ["tolist", "objects", "marshal"]


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    """Makes IdLists take one way for every length."""
    if request.param == "tolist":
        monkeypatch.setattr(id_lists, "OBJECTS_FROM", 1 << 62)
    else:
        monkeypatch.setattr(id_lists, "OBJECTS_FROM", 0)
        monkeypatch.setattr(id_lists, "MARSHAL_PER_VALUE", 0 if request.param == "marshal"
                            else 1 << 62)
    return request.param


parts_below = st.integers(1, 300).flatmap(lambda n_values: st.tuples(
    st.just(n_values),
    st.lists(st.lists(st.integers(0, n_values - 1), max_size=50), max_size=4)))


@given(case=parts_below)
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_way_equals_tolist(way, case):
    n_values, parts = case
    arrays = [np.array(p, np.int32) for p in parts]
    got = IdLists(n_values)(arrays)
    assert got == [i for p in parts for i in p]
    assert all(type(i) is int for i in got)


def test_ways_at_the_edges(way):
    lists = IdLists(70_000)
    ids = np.array([0, 69_999, 65_535, 65_536, 1, 0, 69_999], np.int32)
    assert lists([ids]) == ids.tolist()
    assert lists([ids[:3], ids[3:3], ids[3:]]) == ids.tolist()
    assert lists([]) == []
    assert lists([ids[:0]]) == []


def test_each_id_is_one_shared_int(monkeypatch):
    monkeypatch.setattr(id_lists, "MARSHAL_PER_VALUE", 1)
    ids = np.array([300, 7, 300, 7, 300] * 200, np.int32)
    got = IdLists(301)([ids])
    assert got == ids.tolist()
    assert got[0] is got[2] is got[-1] and got[1] is got[3]


def spy_marshal(monkeypatch) -> list:
    """The number of records of each stream IdLists hands marshal (5 bytes each)."""
    id_lists.marshal_refs_work()  # its one check, before the spy counts
    calls, real = [], id_lists.marshal.loads
    monkeypatch.setattr(id_lists.marshal, "loads",
                        lambda stream: calls.append(len(stream)) or real(stream))
    return calls


def no_marshal(monkeypatch):
    for name in ("_marshal_stream", "_marshal_lists"):
        monkeypatch.setattr(id_lists, name, None)  # would raise if called


def test_the_default_thresholds_pick_each_way(monkeypatch):
    calls = spy_marshal(monkeypatch)
    lists = IdLists(1000)
    rng = np.random.default_rng(0)
    for n in (id_lists.OBJECTS_FROM - 1, id_lists.OBJECTS_FROM,
              id_lists.MARSHAL_PER_VALUE * 1000 - 1, id_lists.MARSHAL_PER_VALUE * 1000):
        ids = rng.integers(0, 1000, n).astype(np.int32)
        assert lists([ids]) == ids.tolist()
    assert len(calls) == 1
    assert lists._objects is not None


def test_lists_longer_than_marshal_holds_take_the_objects(monkeypatch):
    monkeypatch.setattr(id_lists, "MARSHAL_PER_VALUE", 1)
    monkeypatch.setattr(id_lists, "MARSHAL_MAX_IDS", 999)
    no_marshal(monkeypatch)
    ids = np.arange(1000, dtype=np.int32) % 37
    assert IdLists(37)([ids]) == ids.tolist()
    assert IdLists(37).split([ids], np.array([10, 1000])) == [ids[:10].tolist(),
                                                              ids[10:].tolist()]


def test_marshal_reads_our_stream_on_this_python():
    # If a Python ever reads marshal's format otherwise, the object way takes over (see the
    # next test), but the speed the README gives depends on this.
    assert id_lists.marshal_refs_work()


def test_without_marshal_the_objects_serve(monkeypatch):
    monkeypatch.setattr(id_lists, "marshal_refs_work", lambda: False)
    monkeypatch.setattr(id_lists, "MARSHAL_PER_VALUE", 0)
    no_marshal(monkeypatch)
    ids = np.arange(1000, dtype=np.int32) % 37
    assert IdLists(37)([ids]) == ids.tolist()
    assert IdLists(37).split([ids], np.array([0, 1000])) == [[], ids.tolist()]


cut_parts = st.integers(1, 300).flatmap(lambda n_values: st.tuples(
    st.just(n_values),
    st.lists(st.lists(st.integers(0, n_values - 1), max_size=30), max_size=4),
    st.lists(st.integers(0, 120), max_size=8)))


@given(case=cut_parts)
@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_way_splits_as_slices(way, case):
    # encode_batch's lists: the ids cut at ends, empty lists and all; by marshal they come out
    # of one stream, each list a length then its references.
    n_values, parts, cuts = case
    flat = [i for p in parts for i in p]
    ends = sorted(min(c, len(flat)) for c in cuts) + [len(flat)]
    got = IdLists(n_values).split([np.array(p, np.int32) for p in parts],
                                  np.array(ends, np.int64))
    starts = [0] + ends[:-1]
    assert got == [flat[a:b] for a, b in zip(starts, ends)]


def test_a_wrong_stream_is_an_error_not_a_crash():
    # marshal checks every back-reference: a number past the ints defined is a ValueError.
    head = id_lists._marshal_head(3)
    stream = id_lists._marshal_stream(head, [np.array([0, 3], np.int32)], 2)
    with pytest.raises(ValueError):
        id_lists.marshal.loads(stream)
