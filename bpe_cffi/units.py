"""Fast pre-tokenization (GPT-2's pattern): count or encode each distinct *unit* once.

A unit is a whitespace run followed by a non-whitespace run (csrc/units.h says why this is
exact for GPT-2's pattern). The C library finds and dedupes the units in one pass and splits
each distinct unit with GPT-2's pattern itself, using a table of character classes that is
computed here from the `regex` module, so C and `regex` agree on every code point.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Mapping, Sequence

import numpy as np
import regex

from ._lib import check, ffi, lib

Arrays = tuple[bytes, np.ndarray, np.ndarray]  # (bytes back to back, int64 offsets, int64 counts)
N_CODE_POINTS = 0x110000  # entries of the character-class table (csrc/units.h)


def counts_to_arrays(counts: Mapping[bytes, int]) -> Arrays:
    """{word: count} -> Arrays, checking the types and signs on the way."""
    if not isinstance(counts, Mapping):
        raise TypeError(f"counts must be a mapping of bytes to int, not {type(counts).__name__}")
    words = list(counts)
    for w in words:
        if not isinstance(w, bytes):
            raise TypeError(f"counts keys must be bytes, got {type(w).__name__}: {w!r}")
    try:
        values = np.fromiter(counts.values(), dtype=np.int64, count=len(words))
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"counts values must be ints that fit in 64 bits: {e}") from None
    if len(values) and values.min() < 0:
        raise ValueError("counts values must be >= 0")
    offsets = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)), out=offsets[1:])
    return b"".join(words), offsets, values


def arrays_to_counts(arrays: Arrays) -> dict[bytes, int]:
    """Arrays -> {word: count}."""
    blob, offsets, counts = arrays
    if len(counts) == 0:
        return {}
    if b"\xff" in blob:  # not UTF-8 (say, counts loaded from a file): a slice per word
        ends = offsets.tolist()
        words = [blob[a:b] for a, b in zip(ends, ends[1:])]
    else:  # 0xFF never occurs in UTF-8: put one between the words and let split cut them
        words = np.insert(np.frombuffer(blob, np.uint8), offsets[1:-1], 0xFF).tobytes() \
            .split(b"\xff")
    return dict(zip(words, counts.tolist()))


def utf8_offsets(pieces: Sequence[str]) -> tuple[bytes, np.ndarray]:
    """The UTF-8 bytes of "".join(pieces) and the int64 byte offsets of the pieces (n + 1)."""
    joined = "".join(pieces)
    blob = joined.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here
    offsets = np.zeros(len(pieces) + 1, np.int64)
    if not pieces:
        return blob, offsets
    char_ends = np.cumsum(np.fromiter(map(len, pieces), np.int64, len(pieces)))
    if len(blob) == len(joined):  # ASCII: characters are bytes
        offsets[1:] = char_ends
    else:  # the UTF-8 width of each character, summed up to each piece's end
        cps = np.frombuffer(joined.encode("utf-32-le"), np.uint32)
        widths = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
        offsets[1:] = np.cumsum(widths, dtype=np.int64)[char_ends - 1]
    return blob, offsets


def _buf(dtype: str, data):
    return ffi.from_buffer(dtype, data)


@functools.lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """One byte per code point: 0 \\p{L}, 1 \\p{N}, 2 \\s, 3 other, as the regex module sees
    them (about 25 ms, once per process)."""
    every = np.arange(N_CODE_POINTS, dtype=np.uint32).tobytes().decode("utf-32-le",
                                                                        "surrogatepass")
    classes = np.full(N_CODE_POINTS, 3, np.uint8)
    for cls, pattern in ((0, r"\p{L}+"), (1, r"\p{N}+"), (2, r"\s+")):
        for m in regex.finditer(pattern, every):
            classes[m.start():m.end()] = cls
    return classes


class Counter:
    """A C counter of byte strings (bpe_counter): entries keep first-insertion order."""

    def __init__(self):
        out = ffi.new("bpe_counter **")
        check(lib.bpe_counter_new(out), "bpe_counter_new")
        self._handle = ffi.gc(out[0], lib.bpe_counter_free)

    @property
    def _c(self):
        """The C counter; a ValueError once released (its memory is gone)."""
        if self._handle is None:
            raise ValueError("this Counter was released")
        return self._handle

    def add(self, blob: bytes, offsets: np.ndarray, counts: np.ndarray) -> None:
        check(lib.bpe_counter_add(self._c, _buf("uint8_t[]", blob), len(blob),
                                  _buf("int64_t[]", offsets), _buf("int64_t[]", counts),
                                  len(counts)), "bpe_counter_add")

    def add_units(self, text: bytes, starts: Sequence[int], ends: Sequence[int]) -> bool:
        """Counts the units of the UTF-8 pieces text[starts[i]:ends[i]]; False if one is not
        valid UTF-8."""
        rc = lib.bpe_counter_add_units(self._c, _buf("uint8_t[]", text), len(text),
                                       _buf("int64_t[]", np.asarray(starts, np.int64)),
                                       _buf("int64_t[]", np.asarray(ends, np.int64)),
                                       len(starts))
        if rc == lib.BPE_EUTF8:
            return False
        check(rc, "bpe_counter_add_units")
        return True

    def export(self) -> Arrays:
        n, nb = ffi.new("int64_t *"), ffi.new("int64_t *")
        lib.bpe_counter_size(self._c, n, nb)
        blob = bytearray(nb[0])
        offsets = np.empty(n[0] + 1, np.int64)
        counts = np.empty(n[0], np.int64)
        lib.bpe_counter_export(self._c, _buf("uint8_t[]", blob), _buf("int64_t[]", offsets),
                               _buf("int64_t[]", counts))
        return bytes(blob), offsets, counts

    def to_dict(self) -> dict[bytes, int]:
        """{word: count}, in insertion order."""
        n, nb = ffi.new("int64_t *"), ffi.new("int64_t *")
        lib.bpe_counter_size(self._c, n, nb)
        if n[0] == 0:
            return {}
        joined = bytearray(nb[0] + n[0] - 1)
        counts = np.empty(n[0], np.int64)
        if not lib.bpe_counter_export_split(self._c, _buf("uint8_t[]", joined),
                                            _buf("int64_t[]", counts)):
            return arrays_to_counts(self.export())  # a word holds 0xFF: not UTF-8
        return dict(zip(bytes(joined).split(b"\xff"), counts.tolist()))

    def release(self) -> None:
        """Frees the C counter now (not whenever the GC runs); the Counter is unusable after."""
        if self._handle is not None:
            ffi.release(self._handle)
            self._handle = None


def split_units(units: Counter) -> Counter:
    """{pre-token: count} in a new C counter, from {unit: count}."""
    words = Counter()
    check(lib.bpe_counter_split_units(units._c, _classes_buf(), N_CODE_POINTS, words._c),
          "bpe_counter_split_units")
    return words


def encode_units(encoder, text: bytes, starts: Sequence[int], ends: Sequence[int],
                 then_id: Sequence[int], cache=ffi.NULL,
                 piece_ends: np.ndarray | None = None) -> np.ndarray:
    """int32 ids of the UTF-8 pieces text[starts[i]:ends[i]], each followed by the special id
    then_id[i] (-1: none), through the unit path: units shared by all pieces. cache: a slot
    cache from SlotCaches.lend, or none; piece_ends: as for encode_scanned."""
    # One id per byte and one per special at most.
    return encode_scanned(encoder, scan_units(text, starts, ends, then_id, cache),
                          len(text) + len(then_id), piece_ends)


def encode_gpt2(encoder, text: bytes, starts: Sequence[int] | None = None,
                ends: Sequence[int] | None = None, then_id: Sequence[int] | None = None,
                special: tuple[bytes, int] | None = None) -> np.ndarray:
    """encode_units for a short text, in one C call that skips the units: each pre-token is
    encoded where it occurs, which costs less than finding the distinct units when there are
    few. Without pieces, the whole text is one piece, or C cuts it at the one special token
    given as (its bytes, its id)."""
    ids = np.empty(_gpt2_room(text, starts), np.int32)
    return ids[:_encode_gpt2_into(encoder, text, _buf("int32_t[]", ids), len(ids), starts, ends,
                                  then_id, special)]


def encode_gpt2_list(encoder, text: bytes, starts: Sequence[int] | None = None,
                     ends: Sequence[int] | None = None, then_id: Sequence[int] | None = None,
                     special: tuple[bytes, int] | None = None) -> list[int]:
    """encode_gpt2 straight into a list, with no array in between: for a text of a few hundred
    characters the arrays cost more than the encoding (~1.2 us of a call)."""
    room = _gpt2_room(text, starts)
    ids = ffi.new("int32_t[]", room)
    return ffi.unpack(ids, _encode_gpt2_into(encoder, text, ids, room, starts, ends, then_id,
                                             special))


def _gpt2_room(text: bytes, starts: Sequence[int] | None) -> int:
    """Ids that encode_gpt2 may write: one per byte and one per special (a piece's, or, for
    a whole text, one more than it needs, so that an empty text still has room)."""
    return len(text) + (1 if starts is None else len(starts))


def _encode_gpt2_into(encoder, text: bytes, ids, room: int, starts, ends, then_id,
                      special) -> int:
    """The C call of encode_gpt2: ids (room for one id per byte and one per special) gets
    them; returns their number."""
    n_out = ffi.new("int64_t *")
    if starts is None:
        special_bytes, special_id = special if special is not None else (b"", -1)
        check(lib.bpe_encoder_encode_gpt2_text(encoder, _buf("uint8_t[]", text), len(text),
                                               special_bytes, len(special_bytes), special_id,
                                               _classes_buf(), N_CODE_POINTS, ids, room, n_out),
              "bpe_encoder_encode_gpt2_text")
    else:
        check(lib.bpe_encoder_encode_gpt2(encoder, _buf("uint8_t[]", text), len(text),
                                          ffi.new("int64_t[]", starts),
                                          ffi.new("int64_t[]", ends),
                                          ffi.new("int32_t[]", then_id), len(starts),
                                          _classes_buf(), N_CODE_POINTS, ids, room, n_out),
              "bpe_encoder_encode_gpt2")
    return n_out[0]


class ScannedUnits:
    """A text's units as bpe_units_scan found them (C memory), for one encode_scanned, which
    frees them: a second use is a ValueError, not a read of freed memory. Units never passed
    on are freed by the GC."""

    def __init__(self, handle):
        self._handle = ffi.gc(handle, lib.bpe_units_free)

    def take(self):
        handle, self._handle = self._handle, None
        if handle is None:
            raise ValueError("these units were already encoded (encode_scanned frees them)")
        return handle


def scan_units(text: bytes, starts: Sequence[int], ends: Sequence[int],
               then_id: Sequence[int], cache=ffi.NULL) -> ScannedUnits:
    """The first half of encode_units: the text's units, found and deduplicated in C. The
    cache, if any, must stay lent until encode_scanned has run."""
    out = ffi.new("bpe_units **")
    check(lib.bpe_units_scan(_buf("uint8_t[]", text), len(text),
                             _buf("int64_t[]", np.asarray(starts, np.int64)),
                             _buf("int64_t[]", np.asarray(ends, np.int64)),
                             _buf("int32_t[]", np.asarray(then_id, np.int32)), len(starts),
                             cache, out),
          "bpe_units_scan")
    return ScannedUnits(out[0])


class SlotCaches:
    """The C slot caches (bpe_slot_cache) a Tokenizer keeps between calls, so that encoding
    long texts again and again reuses the memory of the units' hash tables instead of
    touching fresh memory each time (see csrc/slot_cache.h). Each call on the unit path
    borrows one for its scan and encode. When calls end, at most `keep` caches stay, holding
    at most MAX_HELD bytes between them (a cache that would pass it is freed). Encoding
    realmix (27.5 MB) leaves 56 MB held, on one thread or two."""

    MAX_HELD = 128 << 20

    def __init__(self, keep: int):
        self._keep = keep
        self._free: list = []  # list.pop and list.append are atomic under the GIL

    @contextlib.contextmanager
    def lend(self):
        try:
            cache = self._free.pop()
        except IndexError:
            out = ffi.new("bpe_slot_cache **")
            check(lib.bpe_slot_cache_new(out), "bpe_slot_cache_new")
            cache = ffi.gc(out[0], lib.bpe_slot_cache_free)
        try:
            yield cache
        finally:
            held = sum(map(lib.bpe_slot_cache_held, self._free + [cache]))
            if len(self._free) < self._keep and held <= self.MAX_HELD:
                self._free.append(cache)


@functools.lru_cache(maxsize=1)
def _classes_buf():
    return ffi.from_buffer("uint8_t[]", char_classes())  # keeps the array alive


def encode_scanned(encoder, units: ScannedUnits, max_ids: int,
                   piece_ends: np.ndarray | None = None) -> np.ndarray:
    """The second half: each distinct unit encoded once, then the ids of every occurrence
    (at most max_ids of them). If piece_ends is given (int64, one per piece scanned), it
    receives the number of ids up to the end of each piece and its special. Frees units,
    whatever happens."""
    handle = units.take()
    try:
        ids = np.empty(max_ids, np.int32)
        n_out = ffi.new("int64_t *")
        ends = ffi.NULL if piece_ends is None else _buf("int64_t[]", piece_ends)
        check(lib.bpe_encoder_encode_units(encoder, handle, _classes_buf(), N_CODE_POINTS,
                                           _buf("int32_t[]", ids), len(ids), n_out, ends),
              "bpe_encoder_encode_units")
    finally:
        ffi.release(handle)  # frees the units now
    return ids[:n_out[0]]
