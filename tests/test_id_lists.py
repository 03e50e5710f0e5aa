"""bpe_cffi.id_lists: lists of ids from int32 arrays, by every way it has, against tolist()."""
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_cffi import id_lists
from bpe_cffi.id_lists import IdLists

WAYS = ["tolist", "objects", "marshal", "addresses"]


@pytest.fixture(params=WAYS)
def way(request, monkeypatch):
    """Makes IdLists take one way for every length."""
    monkeypatch.setattr(id_lists, "ADDRESSES_FROM", 0 if request.param == "addresses"
                        else 1 << 62)
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
              id_lists.MARSHAL_PER_VALUE * 1000 - 1, id_lists.MARSHAL_PER_VALUE * 1000,
              id_lists.ADDRESSES_FROM):
        ids = rng.integers(0, 1000, n).astype(np.int32)
        assert lists([ids]) == ids.tolist()
    assert len(calls) == 1  # the fourth; the fifth went by addresses
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


# ---- by addresses: every reference accounted for ----

def refcounts(objects) -> tuple[list[int], int]:
    """The objects' reference counts, and None's."""
    return [sys.getrefcount(x) for x in objects], sys.getrefcount(None)


def same_refcounts(before, after, gained: int = 0, lists: IdLists | None = None) -> bool:
    """Whether each object gained `gained` references, and None one per item of the object
    arrays `lists` keeps for its next lists (all None). The object array that a list by
    address is made through holds borrowed items for a while and gets its references to None
    back, but other code (a traceback's frames, say) moves None's count by a few hundred
    meanwhile; a lost restore would be one per id, 65 536 or more here."""
    kept = sum(map(len, lists._spare_items)) if lists else 0
    return after[0] == [b + gained for b in before[0]] and \
        abs(after[1] - before[1] - kept) < 5000


def test_addresses_work_on_this_python():
    # If they ever do not (another Python, another numpy), marshal takes over; the README's
    # speed depends on this.
    assert id_lists.addresses_work()


def test_lists_by_addresses_take_and_give_back_every_reference():
    lists = IdLists(700)
    big = lists._shared()[300:]  # ints past CPython's small ones, which others share
    ids = 300 + np.arange(200_000, dtype=np.int32) % 400
    before = refcounts(big)
    got = lists([ids[:5], ids[5:]])
    assert got == ids.tolist()
    assert got[0] is big[0] and got[400] is big[0]
    # Each shared int gained one reference per item of the list, None one per item of the
    # object array kept for the next list.
    assert len(lists._spare_items) == 1 and len(lists._spare_items[0]) == len(ids)
    assert same_refcounts(before, refcounts(big), 500, lists)
    del got
    assert same_refcounts(before, refcounts(big), 0, lists)


def test_lists_by_addresses_reuse_the_object_array(monkeypatch):
    lists, made, k = IdLists(1000), [], id_lists.ADDRESSES_FROM
    real_empty = np.empty
    monkeypatch.setattr(id_lists.np, "empty", lambda *args, **kwargs:
                        made.append(args[0]) or real_empty(*args, **kwargs))
    ids = np.arange(3 * k, dtype=np.int32) % 1000
    for n in (2, 3, 1, 3):  # a shorter list takes the kept array's first items
        assert lists([ids[:n * k]]) == ids[:n * k].tolist()
    assert made == [2 * k, 3 * k]
    assert [len(a) for a in lists._spare_items] == [3 * k]
    assert all(x is None for x in lists._spare_items[0])
    monkeypatch.setattr(id_lists, "ITEMS_HELD", 0)  # too large to keep: used, then dropped
    assert lists([ids]) == ids.tolist() and lists._spare_items == []


def test_lists_by_addresses_on_several_threads_at_once():
    # Each call takes the kept object array or makes its own; none shares one with another.
    lists, k = IdLists(1000), id_lists.ADDRESSES_FROM
    rng = np.random.default_rng(1)
    cases = [rng.integers(0, 1000, k * (1 + i % 3)).astype(np.int32) for i in range(24)]
    with ThreadPoolExecutor(6) as ex:
        got = list(ex.map(lambda ids: lists([ids]), cases))
    assert got == [ids.tolist() for ids in cases]
    assert 1 <= len(lists._spare_items) <= 6
    assert all(x is None for a in lists._spare_items for x in a)


def test_a_wrong_id_by_addresses_is_an_error_and_gives_back_everything():
    shared = np.array([1_000_001, 1_000_002], dtype=object)
    before = refcounts(shared)
    for bad in (2, -1):
        with pytest.raises(ValueError, match="bpe_gather_words"):
            id_lists.list_by_addresses(shared, [np.array([0, 1, bad, 0], np.int32)],
                                       np.empty(4, dtype=object))
    assert same_refcounts(before, refcounts(shared))


def test_lists_by_addresses_are_made_off_the_main_thread(monkeypatch):
    # Where no KeyboardInterrupt can land between the gather and the restore.
    assert id_lists.addresses_work()  # its own check first, before the spy counts
    threads, real = [], id_lists.list_by_addresses
    monkeypatch.setattr(id_lists, "list_by_addresses", lambda *args: threads.append(
        threading.current_thread()) or real(*args))
    ids = np.arange(id_lists.ADDRESSES_FROM, dtype=np.int32) % 1000
    assert IdLists(1000)([ids]) == ids.tolist()
    assert len(threads) == 1 and threads[0] is not threading.main_thread()


id_lists_lib = id_lists.lib


class SlowGather:
    """id_lists' C library, with a pause after each gather: the window in which the object
    array holds borrowed items."""

    def __init__(self, pause: float):
        self.pause, self.gathered = pause, threading.Event()

    def __getattr__(self, name):
        return getattr(id_lists_lib, name)

    def bpe_gather_words(self, *args):
        rc = id_lists_lib.bpe_gather_words(*args)
        self.gathered.set()
        time.sleep(self.pause)
        return rc


def test_ctrl_c_while_a_list_is_made_by_addresses(monkeypatch):
    # An interrupt between the gather and the giving back must not leave the borrowed items
    # to numpy, which would drop references it never took (a crash, sooner or later). Here
    # it lands while the worker thread waits after the gather: the main thread gets the
    # KeyboardInterrupt once the worker has made the list and given the items back.
    assert id_lists.addresses_work()  # its own check first, at full speed
    slow = SlowGather(0.3)
    monkeypatch.setattr(id_lists, "lib", slow)
    lists = IdLists(700)
    big = lists._shared()[300:]
    ids = 300 + np.arange(id_lists.ADDRESSES_FROM, dtype=np.int32) % 400
    before = refcounts(big)
    threading.Thread(target=lambda: slow.gathered.wait(5) and
                     os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        lists([ids])
    assert slow.gathered.is_set()
    # The list was made and dropped, the object array given back its Nones and kept.
    assert same_refcounts(before, refcounts(big), 0, lists)


def test_without_addresses_marshal_serves(monkeypatch):
    monkeypatch.setattr(id_lists, "addresses_work", lambda: False)
    calls = spy_marshal(monkeypatch)
    ids = np.arange(id_lists.ADDRESSES_FROM, dtype=np.int32) % 1000
    assert IdLists(1000)([ids]) == ids.tolist()
    assert len(calls) == 1
