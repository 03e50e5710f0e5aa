"""Word counts: a C counter of byte strings, and the flat arrays they travel in.

Counts cross process and task boundaries as Arrays: the words' bytes back to back, int64
offsets (one more than words) and int64 counts, which pickle and spill compactly.
"""
from __future__ import annotations

import operator
from typing import Mapping, Sequence

import numpy as np

from ._lib import c_ready, check, ffi, lib
from .files import offsets_of

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
    values = list(counts.values())
    if not set(map(type, values)) <= {int}:  # numpy's ints pass; a float or a str is no count
        for v in values:
            if isinstance(v, bool) or not hasattr(type(v), "__index__"):
                raise TypeError(f"counts values must be ints, got {type(v).__name__}: {v!r}")
        values = list(map(operator.index, values))
    try:
        values = np.fromiter(values, dtype=np.int64, count=len(words))
    except OverflowError:  # a count past int64, either way (docs/spec.md 1.4)
        past = next(v for v in values if not -2**63 <= v < 2**63)
        if past < 0:
            raise ValueError("counts values must be >= 0") from None
        raise OverflowError(f"counts values must be below 2**63 (counts are 64-bit), got "
                            f"{past}") from None
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
    """The UTF-8 bytes of "".join(pieces) and the int64 byte offsets of the pieces (n + 1).
    The strs are joined and then encoded, and the pieces' character offsets made byte
    offsets in C, without the GIL: for a batch's documents, 16 against 24 ms for each made
    UTF-8 on its own (146 k lines of realmix, fresh strs), most of it holding the GIL."""
    joined = "".join(pieces)
    blob = joined.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here
    offsets = offsets_of(pieces)
    if len(blob) != len(joined):  # not ASCII, where characters are bytes
        check(lib.bpe_utf8_char_offsets(blob, len(blob), _buf("int64_t[]", offsets),
                                        len(offsets)), "bpe_utf8_char_offsets")
    return blob, offsets


def utf8_documents(texts: Sequence[str], separated: bool = True
                   ) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The UTF-8 of texts joined by U+0000 (the byte 0, which no other character holds), and
    where each text's bytes start and end (int64, one each). C finds the separators again with
    memchr, in less time than the texts' lengths take to read and make byte offsets
    (utf8_offsets). A text that holds U+0000 itself, or separated=False (special tokens that
    hold it, which a search of the whole would find at the separators), leaves them joined
    without separators."""
    n = len(texts)
    starts, ends = np.empty(n, np.int64), np.empty(n, np.int64)
    try:
        if n and separated:
            blob = "\0".join(texts).encode("utf-8")
            if lib.bpe_utf8_split_at_nul(blob, len(blob), _buf("int64_t[]", starts),
                                         _buf("int64_t[]", ends), n) == lib.BPE_OK:
                return blob, starts, ends
        blob, offsets = utf8_offsets(texts)
    except UnicodeEncodeError as e:
        raise text_error(texts, e) from None
    return blob, offsets[:-1], offsets[1:]


def text_error(texts: Sequence[str], error: UnicodeEncodeError) -> UnicodeEncodeError:
    """For the UnicodeEncodeError of texts joined (a lone surrogate): the error the first text
    that holds one gives on its own, so that its object is that text and its position counts
    in it, as when each text is encoded apart (tiktoken's batches); error if none does."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as own:
            return own
    return error


def _buf(ctype: str, data):
    return ffi.from_buffer(ctype, data)


class WordCounter:
    """A C counter of byte strings (bpe_counter): entries keep first-insertion order."""

    def __init__(self):
        """An empty counter."""
        out = ffi.new("bpe_counter **")
        check(lib.bpe_counter_new(out), "bpe_counter_new")
        self._handle = ffi.gc(out[0], lib.bpe_counter_free)

    @property
    def _c(self):
        """The C counter; a ValueError once released (its memory is gone)."""
        if self._handle is None:
            raise ValueError("this WordCounter was released")
        return self._handle

    def add(self, blob: bytes, offsets: np.ndarray, counts: np.ndarray) -> None:
        """Adds counts[i] to the word blob[offsets[i]:offsets[i + 1]] (arrays from Dask may
        start at any byte: c_ready)."""
        offsets, counts = c_ready(offsets, np.int64), c_ready(counts, np.int64)
        check(lib.bpe_counter_add(self._c, _buf("uint8_t[]", blob), len(blob),
                                  _buf("int64_t[]", offsets), _buf("int64_t[]", counts),
                                  len(counts)), "bpe_counter_add")

    def add_units(self, scanner, text: bytes, starts: Sequence[int], ends: Sequence[int]) -> bool:
        """Counts the units (csrc/units.h) of the UTF-8 pieces text[starts[i]:ends[i]], cut as
        the scanner's family allows; False if one is not valid UTF-8."""
        rc = lib.bpe_counter_add_units(self._c, scanner, _buf("uint8_t[]", text), len(text),
                                       _buf("int64_t[]", np.asarray(starts, np.int64)),
                                       _buf("int64_t[]", np.asarray(ends, np.int64)),
                                       len(starts))
        if rc == lib.BPE_EUTF8:
            return False
        check(rc, "bpe_counter_add_units")
        return True

    def __len__(self) -> int:
        """The number of distinct entries."""
        n, nb = ffi.new("int64_t *"), ffi.new("int64_t *")
        lib.bpe_counter_size(self._c, n, nb)
        return n[0]

    def export(self) -> Arrays:
        """The entries as Arrays, in insertion order."""
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

    def split_units(self, scanner, words: "WordCounter | None" = None) -> "WordCounter":
        """{pre-token: count} from this counter's {unit: count}, added to words (a new
        counter if None), which is returned."""
        words = WordCounter() if words is None else words
        check(lib.bpe_counter_split_units(self._c, scanner, words._c), "bpe_counter_split_units")
        return words

    def release(self) -> None:
        """Frees the C counter now (not whenever the GC runs); the Counter is unusable after."""
        if self._handle is not None:
            ffi.release(self._handle)
            self._handle = None
