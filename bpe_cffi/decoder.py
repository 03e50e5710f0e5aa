"""Decoding (docs/spec.md): ids -> the tokens' bytes, concatenated, as UTF-8 text.

A few ids are joined in Python (as fast for them); from _IN_C ids on, every token's bytes sit
in one C table by id (made on first use) and are copied in two passes: the length, which
finds an unknown id before anything is written, then the bytes.
"""
from __future__ import annotations

import array
import operator
import reprlib
from typing import Iterable, Mapping

import numpy as np

from ._lib import c_ready, check, ffi, lib

_IN_C = 64  # ids from which decode copies the bytes in C


def _index_in(i, table: Mapping[int, bytes]) -> bool:
    """Whether i is an int (or has __index__) that is an id of table."""
    try:
        return operator.index(i) in table
    except TypeError:
        return False


class UnknownId(ValueError):
    """An id that is not in the vocabulary, and its position among the ids decoded."""

    def __init__(self, token_id, position: int):
        self.id = token_id.item() if isinstance(token_id, np.generic) else token_id
        self.position = position
        super().__init__(f"id {self.id!r} is not in the vocabulary (at index {position} of the "
                         "ids)")

    def __reduce__(self):
        return type(self), (self.id, self.position)


class Decoder:
    """The tokens' bytes by id."""

    def __init__(self, id_to_token: Mapping[int, bytes], n_ids: int):
        self._tokens = id_to_token
        self._n_ids = n_ids
        self._table = None  # the C table, made on first use; False: ids too scattered

    def decode(self, ids: Iterable[int]) -> str:
        """The tokens' bytes joined and decoded as UTF-8 (bad bytes become U+FFFD)."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def decode_bytes(self, ids: Iterable[int]) -> bytes | bytearray:
        """The tokens' bytes joined."""
        if type(ids) is list and len(ids) < _IN_C:  # the common case, first
            return self._join(ids)
        as_int64 = None
        if isinstance(ids, np.ndarray):
            if ids.ndim != 1:  # a batch's rows
                raise TypeError(f"decode takes a 1-D sequence of ids, not an array of shape "
                                f"{ids.shape}")
            if ids.dtype.kind == "b":  # a mask, not ids
                raise TypeError("decode takes ids, not an array of bools")
            if ids.dtype.kind in "iu":
                as_int64 = c_ready(ids, np.int64)  # a strided or misaligned view is copied
            else:
                ids = ids.tolist()
        else:
            if isinstance(ids, (bytes, bytearray, memoryview)):  # whose items are ints
                raise TypeError(f"decode takes a sequence of ids, not {type(ids).__name__} "
                                f"(text's bytes are not ids)")
            if not isinstance(ids, list):
                ids = list(ids)
            if len(ids) >= _IN_C:
                try:  # strict: only ints (or objects with __index__) go into an int64 array
                    as_int64 = np.frombuffer(array.array("q", ids), np.int64)
                except (TypeError, OverflowError):
                    pass  # the join says which id is wrong
        table = self._c_table() if as_int64 is not None and len(as_int64) >= _IN_C else None
        if table is None:
            return self._join(ids.tolist() if isinstance(ids, np.ndarray) else ids)
        buf = ffi.from_buffer("int64_t[]", as_int64)
        n_bytes, bad = ffi.new("int64_t *"), ffi.new("int64_t *")
        rc = lib.bpe_decoder_length(table, buf, len(as_int64), n_bytes, bad)
        if rc == lib.BPE_EINVAL and bad[0] >= 0:
            raise UnknownId(ids[bad[0]], bad[0])
        check(rc, "bpe_decoder_length")
        data = bytearray(n_bytes[0])
        check(lib.bpe_decoder_decode(table, buf, len(as_int64), ffi.from_buffer(data),
                                     len(data), n_bytes), "bpe_decoder_decode")
        return data

    def _join(self, ids: list) -> bytes:
        """Ids are ints, or objects with __index__ (numpy's); a float is no id (a TypeError),
        though the dict would take 65.0 for 65."""
        table = self._tokens
        try:
            return b"".join(map(table.__getitem__, map(operator.index, ids)))
        except (KeyError, TypeError):
            at, bad = next((k, i) for k, i in enumerate(ids) if not _index_in(i, table))
            bad = bad.item() if isinstance(bad, np.generic) else bad
            if not hasattr(type(bad), "__index__"):  # as tiktoken and tokenizers have it
                raise TypeError(f"an id is an int, not {type(bad).__name__} "
                                f"({reprlib.repr(bad)})") from None
            raise UnknownId(bad, at) from None

    def _c_table(self):
        """The C table of every token's bytes by id (made on first use; two threads may both
        make one, and either serves), or None when the ids are too scattered to index."""
        if self._table is None:
            n_ids, tokens = self._n_ids, self._tokens
            if n_ids > 8 * len(tokens) + 65536:
                self._table = False
            else:
                ids = np.fromiter(tokens, np.int64, len(tokens))
                values = list(tokens.values())
                lengths = np.fromiter(map(len, values), np.int64, len(values))
                start, length = np.zeros(n_ids, np.int64), np.full(n_ids, -1, np.int64)
                start[ids] = np.cumsum(lengths) - lengths
                length[ids] = lengths
                blob = b"".join(values)
                out = ffi.new("bpe_decoder **")
                check(lib.bpe_decoder_new(ffi.from_buffer("uint8_t[]", blob), len(blob),
                                          ffi.from_buffer("int64_t[]", start),
                                          ffi.from_buffer("int64_t[]", length), n_ids, out),
                      "bpe_decoder_new")
                self._table = ffi.gc(out[0], lib.bpe_decoder_free)
        return self._table or None
