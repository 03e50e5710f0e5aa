"""The C encoder behind Tokenizer: str -> int32 ids, through the one C entry point bpe_encode.

Python does what needs Python: the UTF-8 bytes of a str, the special tokens (specials.py), the
regex for a pattern without a C scanner, and cutting a long text at safe edges (chunking.py)
into parts that threads encode at once, since bpe_encode runs without the GIL. bpe_encode
itself picks how to encode (csrc/encode.c).
"""
from __future__ import annotations

import copy
import os
from concurrent.futures import ThreadPoolExecutor
from typing import AbstractSet, Iterable, Iterator, Mapping

import numpy as np

from ._lib import c_ready, check, ffi, lib
from .chunking import Edges
from .counter import text_error, utf8_documents, utf8_offsets
from .files import MergeNotInVocabulary, MergeParts, offsets_of
from .patterns import Pretokenizer
from .specials import Pieces, SpecialTokens, special_only_ids
from .threads import in_threads

_LIST_DIRECT_CHARS = 1 << 10  # up to this many characters encode_list skips numpy
_SHARED_INTS_FROM = 1 << 16  # from this many ids on, a list takes the vocabulary's own ints
_THREAD_MIN_BYTES = 1 << 20  # a text is cut for threads only into parts at least this long
# Parts per thread, dealt to the threads as they free up: texts are uneven (realmix's second
# half holds 1.7x the distinct units of its first), and two parts a thread even that out at
# the price of a few more units encoded once per part.
_PARTS_PER_THREAD = 2
# A list is made a part at a time on the calling thread while the threads encode the parts
# after it: smaller parts let it start sooner and leave less to do once the last is encoded
# (realmix as one text, cl100k: 246 against 296 ms with two parts a thread).
_LIST_PARTS_PER_THREAD = 8
# A batch is cut finer, so that the UTF-8 of the next run is made while the threads encode.
_BATCH_PARTS_PER_THREAD = 8
_BATCH_MIN_CHARS = 1 << 18
# A long text split by the regex module is encoded this many pre-tokens at a time: its list
# of pre-tokens, as strs, took ~44 bytes a byte of text (encode_file of 64 MB with no
# special token to cut at: 2.8 GB).
_REGEX_BATCH = 1 << 18


class Encoder:
    """Merges (and the vocabulary's ids) in C, with the pre-tokenizer and special tokens of a
    tokenizer."""

    def __init__(self, token_to_id: Mapping[bytes, int], merges: MergeParts,
                 n_ids: int, pretokenizer: Pretokenizer, specials: SpecialTokens,
                 num_threads: int, cache_bytes: int, ignore_merges: bool = False,
                 special_only: AbstractSet[int] = frozenset()):
        self.pretokenizer = pretokenizer
        self.specials = specials
        self.num_threads = num_threads
        self._threads: dict = {}  # (pid, size) -> executor: made on first use
        self._scanner = pretokenizer.scanner
        self._edges = Edges(specials.encoded, pretokenizer.edges)
        byte_ids = np.array([token_to_id.get(bytes([b]), -1) for b in range(256)], np.int32)
        self._byte_ids = byte_ids
        self._missing_bytes = bool((byte_ids < 0).any())  # only then can an id be -1
        left, right, merged = merge_ids(token_to_id, merges)
        out = ffi.new("bpe_encoder **")
        check(lib.bpe_encoder_new(_buf("int32_t[]", byte_ids), _buf("int32_t[]", left),
                                  _buf("int32_t[]", right), _buf("int32_t[]", merged),
                                  len(merges), n_ids, out), "bpe_encoder_new")
        self._c = ffi.gc(out[0], lib.bpe_encoder_free)
        if ignore_merges:
            self._set_whole_tokens(token_to_id, specials, left, right, merged, special_only)
        self.cache_bytes = cache_bytes
        self._n_ids = n_ids
        self._ints = None  # the ints 0 .. n_ids - 1 as an object array: made on first use
        # ... unless the ids are scattered far beyond the tokens (legal, if odd): an array of
        # every int below 10**8 took 4.7 GB for one list.
        self._shared_ints = n_ids <= 8 * len(token_to_id) + 65536
        self._cache = ffi.NULL
        if cache_bytes:
            cache = ffi.new("bpe_unit_cache **")
            rc = lib.bpe_unit_cache_new(cache_bytes, n_ids, cache)
            if rc == lib.BPE_ENOMEM:  # the whole bound is reserved now, backed as it fills
                raise MemoryError(f"cache_bytes={cache_bytes}: this machine cannot reserve "
                                  "that much memory for the cache of encoded units")
            check(rc, "bpe_unit_cache_new")
            self._cache = ffi.gc(cache[0], lib.bpe_unit_cache_free)

    def _set_whole_tokens(self, token_to_id: Mapping[bytes, int], specials: SpecialTokens,
                          left: np.ndarray, right: np.ndarray, merged: np.ndarray,
                          special_only: AbstractSet[int]) -> None:
        """tiktoken's rule (and tokenizers' ignore_merges): a pre-token whose bytes are a token
        is that token, whatever the merges make of its bytes. Every token counts but a special
        token that is only that: tiktoken keeps those apart from its ranks. Those are the ids in
        special_only (the specials that were no token of the vocabulary given), and those that
        a vocabulary holding its specials places as only that (specials.special_only_ids, the
        tokens a saved rank file leaves out)."""
        special_ids = np.array([specials.ids[s] for s in specials.tokens], np.int64)
        made = np.isin(special_ids, np.concatenate((left, right, merged, self._byte_ids)))
        ordinary = set(special_ids[made].tolist())  # a byte, a merge's part or result
        special_only = set(special_only) - ordinary | special_only_ids(
            token_to_id.values(), special_ids.tolist(), ordinary.__contains__)
        tokens = [t for t, i in token_to_id.items() if i not in special_only]
        ids = np.fromiter((token_to_id[t] for t in tokens), np.int32, len(tokens))
        check(lib.bpe_encoder_set_whole_tokens(self._c, b"".join(tokens),
                                               _buf("int64_t[]", offsets_of(tokens)),
                                               _buf("int32_t[]", ids), len(tokens)),
              "bpe_encoder_set_whole_tokens")

    def cache_info(self) -> dict[str, int]:
        """What the cache of encoded units holds, and how often it was looked up and hit."""
        if self._cache == ffi.NULL:
            return {"entries": 0, "bytes": 0, "lookups": 0, "hits": 0}
        out = ffi.new("int64_t[4]")
        lib.bpe_unit_cache_stats(self._cache, out, out + 1, out + 2, out + 3)
        return dict(zip(("entries", "bytes", "lookups", "hits"), out))

    def with_specials(self, specials: SpecialTokens) -> "Encoder":
        """This encoder (the same C encoder and threads) with other special tokens: those a
        call allows; the others' text is encoded as ordinary text."""
        other = copy.copy(self)
        other.specials = specials
        other._edges = Edges(specials.encoded, self.pretokenizer.edges)
        return other

    # ---- one text ----

    def encode(self, text: str | bytes, dtype=np.int32) -> np.ndarray:
        """The ids of a text (a str, or its UTF-8: ValueError if it is not valid UTF-8), as
        an array of dtype. A long text is cut at safe edges into parts that threads encode
        at once."""
        if self.pretokenizer.family is None:
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            if len(text) > _REGEX_BATCH:
                return self._encode_regex_long(text).astype(dtype, copy=False)
            return self._encode_regex([text])[0].astype(dtype, copy=False)  # checked there
        # lone surrogates raise UnicodeEncodeError here
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        parts = tuple(self._parts(data, _PARTS_PER_THREAD))
        if len(parts) == 1:
            return parts[0].astype(dtype, copy=False)
        return np.concatenate(parts, dtype=dtype, casting="unsafe")  # cast as they are joined

    def encode_here(self, data, dtype, scratch: np.ndarray) -> np.ndarray:
        """The ids of UTF-8 text (bytes or a buffer; a pattern with a C scanner), as a new
        array of dtype, in one C call on the calling thread: for callers that run threads of
        their own. scratch: an int32 array the call makes its ids in before they are copied
        out (shorter than data: a new one is used), so that a caller encoding text after text
        touches its pages once."""
        pieces = self.specials.pieces(data)
        ids = self._call(data, pieces, scratch=scratch)[0]
        return self._checked(ids, data, pieces).astype(dtype)  # (a copy, even of int32)

    def _parts(self, data: bytes, parts_per_thread: int) -> Iterable[np.ndarray]:
        """The checked ids of data, a part at a time: a long text is cut at safe edges into
        parts (at most parts_per_thread a thread, none under _THREAD_MIN_BYTES) that the
        threads encode at once, yielded in order as they are done; a shorter one is one part,
        encoded here (a tuple of it: no generator on the path of short calls)."""
        n = min(parts_per_thread * self.num_threads, len(data) // _THREAD_MIN_BYTES)
        if n <= 1:
            return (self._checked(self._encode_utf8(data), data),)
        view = memoryview(data)  # slices without copies
        cuts = self._edges.plan_text(data, n)
        return (self._checked(part, data) for part in
                in_threads(self._pool(), self._encode_utf8, [(view[a:b],) for a, b in cuts]))

    def encode_list(self, text: str) -> list[int]:
        """The ids of a text, as a list. Up to _LIST_DIRECT_CHARS characters (most calls of
        most programs), the list comes straight from a C buffer, with no array in between:
        12.9 against ~8 us for 100 characters (docs/performance.md)."""
        if self.pretokenizer.family is None:
            return self.as_list(self.encode(text))
        if len(text) > _LIST_DIRECT_CHARS:
            # Each part becomes a list here while the threads encode the parts after it.
            parts = iter(self._parts(text.encode("utf-8"), _LIST_PARTS_PER_THREAD))
            found = self.as_list(next(parts))
            for part in parts:
                found += self.as_list(part)
            return found
        data = text.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here
        pieces = self.specials.pieces(data)
        room = len(data) + (0 if pieces is None else len(pieces[2]))
        ids = ffi.new("int32_t[]", room)
        found = ffi.unpack(ids, self._run(data, pieces, ids, room))
        if self._missing_bytes and -1 in found:
            self._checked(np.array(found), data, pieces)
        return found

    def as_list(self, ids: np.ndarray) -> list[int]:
        """Checked ids as a list of ints. A long list takes its items from an object array of
        the ints 0 .. n_ids - 1 (numpy's take, public API): references to ints made once, not
        a new int per id. realmix's 6.4 M ids: 84 against 153 ms, and a peak 101 against 210 MB
        over the encode."""
        if len(ids) < _SHARED_INTS_FROM or not self._shared_ints:
            return ids.tolist()
        if self._ints is None:  # two threads may both make it: the same array
            self._ints = np.arange(self._n_ids).astype(object)
        return self._ints.take(ids).tolist()

    def _encode_utf8(self, data: bytes | memoryview) -> np.ndarray:
        """The ids of UTF-8 text, cut at its specials here and encoded in one C call."""
        return self._call(data, self.specials.pieces(data))[0]

    def _pool(self) -> ThreadPoolExecutor:
        """The threads long texts are encoded on, kept from call to call: threads made anew
        for every call cost a long encode ~12% more (docs/performance.md). Made again in a
        child process after a fork (the parent's threads do not exist there) and when
        num_threads changes; its threads end when the Encoder is collected."""
        key = (os.getpid(), self.num_threads)
        executor = self._threads.get(key)
        if executor is None:
            # setdefault is one step under the GIL: threads making their first calls at once
            # all take the executor put first (the others, never used, start no thread).
            executor = self._threads.setdefault(key, ThreadPoolExecutor(self.num_threads))
            for old in [k for k in list(self._threads) if k != key]:
                self._threads.pop(old, None)  # another process's, or another size
        return executor

    # ---- batches ----

    def batch_runs(self, texts: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The ids of the texts a run of texts at a time, in order: each run's int32 ids and
        where each of its texts' ids end (int64, counted from the run's first id). Each text
        is a separate run of pieces, so nothing joins across two texts, while units shared by
        several are encoded once. With two threads or more, a batch of 512 K characters or
        more is cut into runs of about 256 K or more, encoded at once on the threads (each run
        is yielded once all are submitted, and it and those before it are done)."""
        groups = self._batch_groups(texts)
        if len(groups) <= 1:
            yield self._encode_regex(texts) if self.pretokenizer.family is None \
                else self._encode_prepared(*self._prepare(texts))
        elif self.pretokenizer.family is None:
            yield from in_threads(self._pool(), self._encode_regex, [(g,) for g in groups])
        else:
            # The UTF-8 of each run is made here, run after run, while the threads encode the
            # runs before it: made on the threads, it holds the GIL there, and the two threads
            # waited on each other for it (realmix's 408 k lines: 110-117 against 135-158 ms).
            yield from in_threads(self._pool(), self._encode_prepared,
                                  (self._prepare(group) for group in groups))

    def _batch_groups(self, texts: list[str]) -> list[list[str]]:
        """The texts in runs of about equal length, _BATCH_PARTS_PER_THREAD a thread. The
        lengths come from a sample of ~1 000 texts, one every `step`: taking every text's
        length cost realmix's 408 k lines 30 ms, a fifth of the whole call."""
        step = max(1, len(texts) // 1024)
        # reached[i]: about the characters of the texts before text (i + 1) * step
        reached = np.cumsum(np.fromiter(map(len, texts[::step]), np.int64)) * step
        total = int(reached[-1]) if len(reached) else 0
        n = min(_BATCH_PARTS_PER_THREAD * self.num_threads, total // _BATCH_MIN_CHARS,
                len(texts))
        if self.num_threads <= 1 or n <= 1:
            return [texts]
        cuts = (np.searchsorted(reached, total * np.arange(1, n) / n) + 1) * step
        bounds = [0] + sorted(set(c for c in cuts.tolist() if 0 < c < len(texts))) + [len(texts)]
        return [texts[a:b] for a, b in zip(bounds, bounds[1:])]

    def _prepare(self, texts: list[str]):
        """A run of texts as one UTF-8 buffer and its pieces: a text's pieces are those
        between its specials, and its last piece ends it."""
        data, starts, ends = utf8_documents(texts, not self.specials.hold_nul)
        pieces, last_piece = self.specials.document_pieces(data, starts, ends)
        return data, pieces, last_piece

    def _encode_prepared(self, data: bytes, pieces: Pieces, last_piece: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
        """encode_batch of a prepared run of texts, in one C call."""
        ids, piece_ends = self._call(data, pieces, want_ends=True)
        return self._checked(ids, data, pieces), piece_ends[last_piece]

    # ---- patterns without a C scanner ----

    def _encode_regex_long(self, text: str) -> np.ndarray:
        """The ids of a long text split by the regex, about _REGEX_BATCH pre-tokens at a time
        (each pre-token is encoded alone, so the batches' ids joined are the whole's)."""
        parts: list[np.ndarray] = []
        tokens: list[str] = []
        then_id: list[int] = []  # a special's id after an empty token, else -1

        def flush() -> None:
            ids = self._call_pre_tokens(tokens, then_id, [text])[0]
            if self._missing_bytes and len(ids) and ids.min() < 0:
                self._checked(np.full(1, -1, np.int32), text)  # names the whole text's bytes
            parts.append(ids)
            tokens.clear()
            then_id.clear()

        for piece, is_special in self.specials.split(text):
            if is_special:
                tokens.append("")
                then_id.append(self.specials.ids[piece])
                continue
            for found in self.pretokenizer.pre_token_batches([piece], _REGEX_BATCH):
                tokens += found
                then_id += [-1] * len(found)
                if len(tokens) >= _REGEX_BATCH:
                    flush()
        if tokens:
            flush()
        return np.concatenate(parts) if parts else np.empty(0, np.int32)

    def _encode_regex(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """encode_batch with the regex: every pre-token it finds is a piece for C, and each
        special and the end of each text an empty piece that carries it."""
        tokens: list[str] = []
        then_id: list[int] = []
        last_piece = []
        split, ids_of = self.pretokenizer.pre_tokens, self.specials.ids
        for text in texts:
            for piece, is_special in self.specials.split(text):
                if is_special:
                    tokens.append("")
                    then_id.append(ids_of[piece])
                else:
                    found = split(piece)
                    tokens += found
                    then_id += [-1] * len(found)
            tokens.append("")
            then_id.append(-1)
            last_piece.append(len(tokens) - 1)
        ids, piece_ends, blob, pieces = self._call_pre_tokens(tokens, then_id, texts, True)
        return self._checked(ids, blob, pieces), piece_ends[np.array(last_piece, np.int64)]

    def _call_pre_tokens(self, tokens: list[str], then_id: list[int], texts: list[str],
                         want_ends: bool = False):
        """bpe_encode of pre-tokens, each a piece followed by then_id's special (-1: none):
        (ids, piece ends if asked for, the UTF-8, the pieces). A lone surrogate raises the
        error of the first of texts that holds one."""
        try:
            blob, offsets = utf8_offsets(tokens)
        except UnicodeEncodeError as e:
            raise text_error(texts, e) from None
        pieces = (offsets[:-1], offsets[1:], np.array(then_id, np.int32))
        return (*self._call(blob, pieces, want_ends), blob, pieces)

    # ---- the C call ----

    def _call(self, data: bytes | memoryview, pieces: Pieces | None, want_ends: bool = False,
              scratch: np.ndarray | None = None):
        """bpe_encode on data's pieces (None: the whole, no special): (int32 ids, and
        int64 piece ends if asked for); the ids in scratch if it has room."""
        room = len(data) + (0 if pieces is None else len(pieces[2]))
        # (A special token's bytes make one id: a byte's room is room enough.)
        ids = scratch[:room] if scratch is not None and len(scratch) >= len(data) else \
            np.empty(room, np.int32)
        ends = np.empty(len(pieces[2]), np.int64) if want_ends else None
        n = self._run(data, pieces, _buf("int32_t[]", ids), len(ids),
                      ffi.NULL if ends is None else _buf("int64_t[]", ends))
        return ids[:n], ends

    def _run(self, data: bytes | memoryview, pieces: Pieces | None, ids, room: int,
             piece_ends=ffi.NULL) -> int:
        """bpe_encode into the C buffer ids (room: one per byte, and one per special);
        returns the number of ids. Pieces come as lists or arrays (specials.pieces)."""
        n_out = ffi.new("int64_t *")
        text = data if isinstance(data, bytes) else _buf("uint8_t[]", data)
        try:
            if pieces is None:
                rc = lib.bpe_encode(self._c, self._scanner, self._cache, text, len(data),
                                    ffi.NULL, ffi.NULL, ffi.NULL, 1, ids, room, n_out,
                                    piece_ends)
            else:
                starts, ends, then_id = pieces
                rc = lib.bpe_encode(self._c, self._scanner, self._cache, text, len(data),
                                    _c_array("int64_t[]", starts, np.int64),
                                    _c_array("int64_t[]", ends, np.int64),
                                    _c_array("int32_t[]", then_id, np.int32), len(then_id),
                                    ids, room, n_out, piece_ends)
        finally:
            # A memoryview (a part for a thread) is exported no longer than the call. An error
            # raised on a thread keeps this frame in a cycle (the future, its error, the
            # traceback); a memoryview still exported there made the collector crash the
            # process as it cleared the cycle (BufferError in tp_clear, then a segfault).
            if text is not data:
                ffi.release(text)
        if rc:
            check(rc, "bpe_encode")
        return n_out[0]

    def _checked(self, ids: np.ndarray, text, pieces: Pieces | None = None) -> np.ndarray:
        """ids, or the MissingBytes error for a byte the vocabulary has no token for (its id
        is -1) in the text's pieces (by default: its text between special tokens, whose bytes
        are their id's)."""
        if self._missing_bytes and len(ids) and ids.min() < 0:
            raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
            data = np.frombuffer(raw, np.uint8)
            pieces = self.specials.pieces(raw) if pieces is None else pieces
            at = np.flatnonzero(self._byte_ids[data] < 0)
            if pieces is not None:  # only bytes inside a piece (pieces are in order)
                starts, ends = np.asarray(pieces[0]), np.asarray(pieces[1])
                k = np.searchsorted(starts, at, side="right") - 1
                at = at[(k >= 0) & (at < ends[np.maximum(k, 0)])]
            missing = np.unique(data[at]).tolist()
            first = int(at[0]) if len(at) else 0
            raise MissingBytes(f"the text holds byte(s) {', '.join(hex(b) for b in missing)} "
                               "which have no token in the vocabulary", first)
        return ids


class MissingBytes(ValueError):
    """A text holds bytes that the vocabulary has no token for; offset: where the first of
    them is in the text's UTF-8 (an encode_file error adds it to the range's start)."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset

    def __reduce__(self):  # from a pool's worker
        return type(self), (self.args[0], self.offset)


def join_runs(runs: Iterable[tuple[np.ndarray, np.ndarray]], dtype
              ) -> tuple[np.ndarray, np.ndarray]:
    """Encoder.batch_runs joined: the ids of all the texts back to back (as dtype), and where
    each text's ids end (int64)."""
    runs = list(runs)
    if len(runs) == 1:
        return runs[0][0].astype(dtype, copy=False), runs[0][1]
    offsets = np.cumsum([0] + [len(ids) for ids, _ in runs[:-1]])
    return (np.concatenate([ids for ids, _ in runs], dtype=dtype, casting="unsafe"),
            np.concatenate([ends + offset for (_, ends), offset in zip(runs, offsets)]))


def _buf(ctype: str, data):
    return ffi.from_buffer(ctype, data)


def _c_array(ctype: str, values, dtype):
    """A list as a new C array, an array as a view of its memory in that dtype."""
    if isinstance(values, list):
        return ffi.new(ctype, values)
    return ffi.from_buffer(ctype, c_ready(values, dtype))


def merges_from_ranks(vocab: Mapping[int, bytes]) -> MergeParts:
    """The merges of a rank table (tiktoken's format has none), as tiktoken applies its ranks:
    any two adjacent parts whose bytes joined are a token merge, the lowest-ranked such token
    first. So every split of a token into two tokens is a merge, ranked by the token (then by
    its parts' ranks, as tokenizers' converter orders them). With ignore_merges (tiktoken's
    whole-token rule) this gives tiktoken's ids; for a table learned by BPE, only the splits
    that BPE made ever apply. The splits are found in C (csrc/merge_ids.c): a 200 000-token
    table's 1.4 M cuts took ~1.3 s as dict lookups of slices."""
    ids = sorted(vocab)
    tokens = [vocab[i] for i in ids]
    at = offsets_of(tokens)
    lengths = np.diff(at)
    # A token has at most one split a cut, and at most one a token its left side can be.
    room = int(np.minimum(lengths - 1, len(tokens)).clip(0).sum())
    token, left, right, cut = (np.empty(room, np.int32) for _ in range(4))
    found = ffi.new("int64_t *")
    blob = b"".join(tokens)
    check(lib.bpe_rank_splits(blob, _buf("int64_t[]", at),
                              _buf("int32_t[]", np.array(ids, np.int32)), len(tokens),
                              _buf("int32_t[]", token), _buf("int32_t[]", left),
                              _buf("int32_t[]", right), _buf("int32_t[]", cut), room, found),
          "bpe_rank_splits")
    n = found[0]
    if n == 0:
        return MergeParts(b"", np.zeros(1, np.int64))
    order = np.lexsort((cut[:n], right[:n], left[:n], token[:n]))  # by token, then parts
    token, cut = token[:n][order], cut[:n][order]
    # Each merge makes its token, so the merges' bytes are their tokens' bytes back to back,
    # the cut between a merge's left and right token.
    size = lengths[token]
    ends = np.cumsum(size)
    merge_at = np.empty(2 * n + 1, np.int64)
    merge_at[0], merge_at[2::2], merge_at[1::2] = 0, ends, ends - size + cut
    data = np.empty(int(ends[-1]), np.uint8)
    check(lib.bpe_gather_bytes(blob, len(blob), _buf("int64_t[]", at[token]),
                               _buf("int64_t[]", size), n, _buf("uint8_t[]", data), len(data)),
          "bpe_gather_bytes")
    return MergeParts(data.tobytes(), merge_at)


def merge_ids(token_to_id: Mapping[bytes, int], merges: MergeParts):
    """The int32 ids (left, right, merged) of each merge, by rank, looked up in C (a
    200 000-token vocabulary's: ~0.03 s against ~0.25 s in a dict)."""
    n = len(merges)
    left, right, merged = (np.empty(n, np.int32) for _ in range(3))
    tokens = list(token_to_id)
    bad = ffi.new("int64_t *")
    rc = lib.bpe_merge_ids(b"".join(tokens), _buf("int64_t[]", offsets_of(tokens)),
                           _buf("int32_t[]", np.fromiter(token_to_id.values(), np.int32,
                                                         len(tokens))), len(tokens),
                           merges.data, _buf("int64_t[]", merges.at), n,
                           _buf("int32_t[]", left), _buf("int32_t[]", right),
                           _buf("int32_t[]", merged), bad)
    if bad[0] >= 0:
        r, k = divmod(bad[0], 3)
        a, b = merges.pair(r)
        what, token = (("names the token", a), ("names the token", b),
                       ("makes the token", a + b))[k]
        raise MergeNotInVocabulary(r, f"{what} {token!r}, which is not in the vocabulary")
    check(rc, "bpe_merge_ids")
    return left, right, merged
