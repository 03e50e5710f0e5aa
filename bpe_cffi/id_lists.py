"""Python lists of token ids from encode's int32 arrays, made faster than ndarray.tolist().

A list of n ids is n references to int objects, and tolist() makes a new int object for
every id. Here every occurrence of an id refers to one shared int object instead (the ints
0 .. n_values - 1 in an object array, made once), in one of three ways:

* the shared ints gathered by id (numpy's take), then tolist(): two passes over the ids,
  with an object array of 8 bytes an id in between;
* for ADDRESSES_FROM ids on, the same without take's references: C copies the ints'
  addresses by id into the memory of an object array of None (bpe_gather_words), tolist()
  takes one reference to each item, and C puts back the array's own items (references to
  None) before numpy can drop them. Sound because the array is private to the call and not
  seen by the garbage collector (numpy's arrays do not take part in it), and every int in it
  is kept alive by the shared array throughout; so no reference is ever dropped that was not
  taken.
  All of it runs on a worker thread, where no KeyboardInterrupt can land between the gather
  and the restore (Python raises those in the main thread only). CPython only, checked on
  first use (addresses_work); else marshal serves. The object array is kept for the next
  list, up to ITEMS_HELD bytes;
* for outputs at least MARSHAL_PER_VALUE times longer than the vocabulary, marshal: the ids
  become marshal's records of a list whose items are back-references ("the object numbered
  k") to the ints 0 .. n_values - 1, defined once at the start of the stream, and
  marshal.loads builds the list in one pass over 5 bytes an id. Those definitions are read
  again on every call (n_values new ints), hence the length limit. marshal's format is
  CPython's own (back-references since version 3, Python 3.4), so the first use checks it on
  a small case; if it ever reads otherwise, the object array serves. encode_batch's lists
  come out of one such stream as a list of lists (split), each a length and its references.

realmix's 6 406 727 ids with a 50 000-token vocabulary, one thread, min-median of 7 (then
freeing the list): tolist() 125-134 ms (50-52), objects 73-78 ms (8), marshal 57-61 ms (9).
Inside encode on two threads the difference is larger (pytest-benchmark, two runs each,
interleaved: encode to a list 304-344 ms with objects, 237-267 ms with marshal). By
addresses, the same ids take 50-54 ms against marshal's 61-72 ms, the two alternating
(HISTORY.md, fourteenth session).
"""
from __future__ import annotations

import functools
import marshal
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from ._lib import check, ffi, lib

OBJECTS_FROM = 512  # ids from which a list is made of shared int objects
MAX_VALUES = 1 << 18  # ... when the ids are below this
ADDRESSES_FROM = 1 << 16  # ids from which by their addresses (a worker thread: ~0.1 ms a call)
ITEMS_HELD = 64 << 20  # bytes of object array an IdLists keeps for its next list by address
MARSHAL_PER_VALUE = 16  # ids per possible value from which marshal makes the list
MARSHAL_MAX_IDS = (1 << 31) - 1  # marshal's lists hold a signed 32-bit length

# marshal's type codes (CPython's Python/marshal.c)
_INT, _REF, _LIST, _TUPLE, _FLAG_REF = b"i", b"r", b"[", b"(", 0x80
_RECORD = np.dtype([("code", "u1"), ("value", "<i4")])  # a code and a little-endian int32


class IdLists:
    """Makes lists of ids in [0, n_values) from int32 arrays."""

    def __init__(self, n_values: int):
        self.n_values = n_values
        self._objects: np.ndarray | None = None  # the shared ints, made on first use
        self._spare_items: list[np.ndarray] = []  # object arrays of None (_by_addresses)
        self._marshal_head: bytes | None = None

    def __call__(self, parts: Sequence[np.ndarray]) -> list[int]:
        """The ids of the parts, one after another, as one list."""
        n = sum(len(p) for p in parts)
        if self._shares_ints(n):
            if n >= ADDRESSES_FROM and addresses_work():
                return _off_main_thread(self._by_addresses, parts, n)
            if self._marshal_pays(n):
                return marshal.loads(_marshal_stream(self._head(), parts, n))[1]
            return self._shared()[_joined(parts)].tolist()
        return _joined(parts).tolist()

    def split(self, parts: Sequence[np.ndarray], ends: np.ndarray) -> list[list[int]]:
        """The ids of the parts, one after another, cut into lists: list k ends before id
        ends[k] (int64, not decreasing, the last one the number of ids). By marshal, the lists
        come straight out of one marshal.loads, with no long list in between to slice (and
        for the garbage collector to walk while the lists are made)."""
        n = sum(len(p) for p in parts)
        if self._shares_ints(n) and self._marshal_pays(n + len(ends)):
            return marshal.loads(_marshal_lists(self._head(), _joined(parts), ends))[1]
        ids, out, start = self(parts), [], 0
        for end in ends.tolist():
            out.append(ids[start:end])
            start = end
        return out

    def _by_addresses(self, parts: Sequence[np.ndarray], n: int) -> list[int]:
        """list_by_addresses, through the object array the last call left if it is large
        enough: a new one is 8 bytes an id of fresh pages and as many references to None to
        take (realmix: ~5 ms, and more in minutes when the host is slow to hand out memory).
        Runs on the worker thread (see __call__), which alone puts the array back, once it
        holds only None again, unless another call has put one back meanwhile (list.pop
        and list.append are atomic; two calls that end at the same instant may both keep
        theirs)."""
        try:
            items = self._spare_items.pop()
        except IndexError:
            items = None
        if items is None or len(items) < n:
            items = np.empty(n, dtype=object)  # None everywhere
        ids = list_by_addresses(self._shared(), parts, items[:n])
        if items.nbytes <= ITEMS_HELD and not self._spare_items:
            self._spare_items.append(items)
        return ids

    def _shared(self) -> np.ndarray:
        """The shared ints, an object array (made on first use)."""
        if self._objects is None:
            self._objects = np.array(range(self.n_values), dtype=object)
        return self._objects

    def _shares_ints(self, n_ids: int) -> bool:
        """Whether n ids are made a list of shared int objects rather than by tolist()."""
        return n_ids >= OBJECTS_FROM and self.n_values <= MAX_VALUES

    def _marshal_pays(self, n_records: int) -> bool:
        return (MARSHAL_PER_VALUE * self.n_values <= n_records <= MARSHAL_MAX_IDS
                and marshal_refs_work())

    def _head(self) -> bytes:
        if self._marshal_head is None:
            self._marshal_head = _marshal_head(self.n_values)
        return self._marshal_head


def _marshal_head(n_values: int) -> bytes:
    """A 2-tuple, then its first item: the list of the ints 0 .. n_values - 1, each flagged
    as a reference (numbered from 0 in order), then the second item's list code."""
    defs = np.empty(n_values, _RECORD)
    defs["code"] = _INT[0] | _FLAG_REF
    defs["value"] = np.arange(n_values)
    return b"".join((_TUPLE, _int32(2), _LIST, _int32(n_values), defs.tobytes(), _LIST))


def _marshal_stream(head: bytes, parts: Sequence[np.ndarray], n: int) -> np.ndarray:
    """head, then a list of n references to the ids' ints: the ids are their numbers."""
    stream, records = _new_stream(head, n, n)
    records["code"] = _REF[0]
    at = 0
    for p in parts:
        records["value"][at:at + len(p)] = p
        at += len(p)
    return stream


def _marshal_lists(head: bytes, ids: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """head, then a list of len(ends) lists: each a length record, then references to its
    ids' ints."""
    lengths = np.diff(ends, prepend=0)
    starts = ends - lengths
    values = np.insert(ids, starts, lengths.astype(np.int32))  # each list's length first
    stream, records = _new_stream(head, len(ends), len(values))
    records["value"] = values
    records["code"] = _REF[0]
    records["code"][starts + np.arange(len(ends))] = _LIST[0]
    return stream


def _new_stream(head: bytes, count: int, n_records: int) -> tuple[np.ndarray, np.ndarray]:
    """A stream of head, the length of the list that follows, and room for n_records records,
    with a view of those. Uninitialized rather than a bytearray: the caller writes every
    record."""
    stream = np.empty(len(head) + 4 + _RECORD.itemsize * n_records, np.uint8)
    stream[:len(head)] = np.frombuffer(head, np.uint8)
    stream[len(head):len(head) + 4] = np.frombuffer(_int32(count), np.uint8)
    return stream, stream[len(head) + 4:].view(_RECORD)


def _int32(x: int) -> bytes:
    return x.to_bytes(4, "little")


def list_by_addresses(shared: np.ndarray, parts: Sequence[np.ndarray],
                      items: np.ndarray) -> list[int]:
    """The list of shared[i] for the int32 ids i of the parts, made by their addresses
    through items, a contiguous object array of None with one item per id (see the module's
    docstring), which holds only None again on return. The ids must lie in
    [0, len(shared)), or this raises ValueError. Call it where no KeyboardInterrupt can
    land: off the main thread."""
    n = len(items)
    words = _words(items)
    own = words[0] if n else 0  # the address of None
    try:
        at, table = 0, _words(shared)
        for p in parts:
            check(lib.bpe_gather_words(table, len(shared), ffi.from_buffer("int32_t[]", p),
                                       len(p), words + at), "bpe_gather_words")
            at += len(p)
        return items.tolist()  # a reference to each item, for the list
    finally:
        lib.bpe_fill_words(words, n, own)


def _off_main_thread(fn, *args):
    """fn(*args) on a worker thread, which no KeyboardInterrupt interrupts (if one lands here
    meanwhile, it is raised once fn is done)."""
    with ThreadPoolExecutor(1) as worker:
        return worker.submit(fn, *args).result()


def _words(a: np.ndarray):
    """The memory of an object array as the machine words it is: the items' addresses."""
    return ffi.cast("uintptr_t *", a.__array_interface__["data"][0])


@functools.cache
def addresses_work() -> bool:
    """Whether list_by_addresses makes the list as meant here (checked once): on CPython,
    where an object array holds its items' addresses, with every reference accounted for."""
    if sys.implementation.name != "cpython" or \
            np.dtype(object).itemsize != ffi.sizeof("uintptr_t"):
        return False
    shared = np.array([1_000_001, 1_000_002, 1_000_003], dtype=object)  # no cached small ints
    before = [sys.getrefcount(x) for x in shared]
    got = _off_main_thread(list_by_addresses, shared,
                           [np.array([2, 0], np.int32), np.array([2, 1], np.int32)],
                           np.empty(4, dtype=object))
    during = [sys.getrefcount(x) for x in shared]
    ok = got == [1_000_003, 1_000_001, 1_000_003, 1_000_002] and got[0] is shared[2] and \
        during == [b + k for b, k in zip(before, (1, 1, 2))]
    del got
    return ok and [sys.getrefcount(x) for x in shared] == before


def _joined(parts: Sequence[np.ndarray]) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, np.int32)


@functools.cache
def marshal_refs_work() -> bool:
    """Whether marshal reads the streams above as meant (checked once)."""
    ids, head = np.array([2, 0, 2, 1], np.int32), _marshal_head(3)
    try:
        one = marshal.loads(_marshal_stream(head, [ids], len(ids)))[1]
        cut = marshal.loads(_marshal_lists(head, ids, np.array([1, 1, 4])))[1]
    except (ValueError, EOFError, TypeError, IndexError):
        return False
    return one == ids.tolist() and one[0] is one[2] and cut == [[2], [], [0, 2, 1]]
