"""Special tokens (docs/spec.md): their ids, and finding them in text, longest first.

Every encode method cuts its text at the special tokens before pre-tokenizing: the pieces
between them are encoded, and each special becomes its own id. SpecialTokens finds them in
UTF-8 bytes, in C (csrc/find.c), and in str (for the regex path) through its UTF-8: the
leftmost-longest matches over UTF-8 are those over str, at whole characters.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ._lib import check, ffi, lib

# Where special tokens cut a text: piece starts, ends, and the special id after each (-1 none).
Pieces = tuple[Sequence[int], Sequence[int], Sequence[int]]
_FEW_BYTES = 1 << 16  # up to this many bytes, pieces are found into lists
_FEW_SPECIALS = 8  # up to this many specials, `in` tests tell a text without any at once
_uncleared = ffi.new_allocator(should_clear_after_alloc=False)  # C writes before Python reads


def unique_specials(special_tokens: Iterable[str] | None) -> list[str]:
    """Validates special tokens and removes duplicates, keeping the first occurrence's place."""
    if special_tokens is None:
        return []
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a list of str, not a single "
                        f"{type(special_tokens).__name__}")
    out: dict[str, None] = {}  # a dict keeps the order and finds a repeat at once
    for s in special_tokens:
        if not isinstance(s, str):
            raise TypeError(f"special tokens must be str, got {type(s).__name__}: {s!r}")
        if not s:
            raise ValueError("a special token cannot be the empty string")
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"the special token {s!r} holds a lone surrogate, which has no "
                             "UTF-8") from None
        out.setdefault(s)
    return list(out)


def place_specials(special_tokens: Mapping[str, int], id_to_token: dict[int, bytes],
                   token_to_id: dict[bytes, int]) -> None:
    """Special tokens given with their ids, as tiktoken gives them ({special: id}): each
    special's bytes put at its id in both maps, so that add_special_ids then keeps that id
    (OpenAI's encodings leave gaps before some specials: cl100k_base's <|endoftext|> is
    100257, after ranks that end at 100255). A ValueError when an id holds another token, or
    the special's bytes are a token at another id (one byte string has one id here)."""
    for s, i in special_tokens.items():
        b = unique_specials([s])[0].encode("utf-8")  # the checks of a listed special
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"the id of the special token {s!r} must be an int, not "
                            f"{type(i).__name__}")
        if not 0 <= i < 2**31:
            raise ValueError(f"the id of the special token {s!r} must be in [0, 2**31), "
                             f"not {i}")
        held, at = id_to_token.get(i, b), token_to_id.get(b, i)
        if held != b:
            raise ValueError(f"the special token {s!r} cannot have id {i}: that is the id of "
                             f"the token {held!r}")
        if at != i:
            raise ValueError(f"the special token {s!r} cannot have id {i}: its bytes are the "
                             f"token of id {at}")
        id_to_token[i] = b
        token_to_id[b] = i


def special_only_ids(ids: Iterable[int], special_ids: Sequence[int],
                     ordinary: Callable[[int], bool]) -> set[int]:
    """The ids of the special tokens that are only that, which tokenizer files keep out of the
    vocabulary (tiktoken's rank file, the model of tokenizer.json): the specials at the top of
    the ids, right after all the others, which run from 0 without a gap (tokenizers numbers
    added tokens by the model vocabulary's length), and listed in the order of their ids, so
    that giving each special the next id after the vocabulary's (add_special_ids) gives them
    back. Any other special is an ordinary token too (a byte, a merge's part or result, a token
    of a vocabulary made otherwise, as Hugging Face's trainer puts its specials at the start)
    and stays in the vocabulary, where a loader finds it by its bytes.
    ids: every token's id, each byte string once; special_ids: the specials' ids, in their
    order; ordinary(i): whether token i is an ordinary token whatever its place (a byte, a
    merge's part or result)."""
    position: dict[int, int] = {}
    for k, i in enumerate(special_ids):
        position.setdefault(i, k)
    ids = set(ids)
    only: set[int] = set()
    i, last = max(ids, default=-1), len(special_ids)  # last: the lowest taken's place
    while i in position and position[i] <= last and (i == 0 or i - 1 in ids) \
            and not ordinary(i):
        only.add(i)
        last = position[i]
        i -= 1
    if only and len(ids) - len(only) != min(only):  # the others leave an id out
        return set()
    return only


def add_special_ids(specials: list[str], id_to_token: dict[int, bytes],
                    token_to_id: dict[bytes, int]) -> dict[str, int]:
    """Each special token's id: that of its bytes when they are a token already, else the
    next id after the vocabulary's, added to both maps. A ValueError when no id below 2**31
    is left."""
    ids = {}
    new_id = max(id_to_token, default=-1) + 1
    for s in specials:
        b = s.encode("utf-8")
        if b not in token_to_id:
            if new_id >= 2**31:
                raise ValueError(f"no id is left for the special token {s!r}: the "
                                 "vocabulary's ids reach 2**31 - 1")
            id_to_token[new_id] = b
            token_to_id[b] = new_id
            new_id += 1
        ids[s] = token_to_id[b]
    return ids


class SpecialTokens:
    """The special tokens of a tokenizer (or of a training run: ids then don't matter), in the
    order given, with their ids."""

    def __init__(self, tokens: Iterable[str] | None, ids: Mapping[str, int] | None = None):
        self.tokens = unique_specials(tokens)
        self.ids = dict(ids) if ids is not None else {s: -1 for s in self.tokens}
        encoded = [s.encode("utf-8") for s in self.tokens]
        self.encoded = encoded
        self._id_of_bytes = {b: self.ids[s] for s, b in zip(self.tokens, encoded)}
        self._single = encoded[0] if len(encoded) == 1 else None
        # For bpe_find_specials: the specials' bytes back to back, longest first, with where
        # each ends, its length and its id (as arrays, and as lists for short texts).
        longest_first = sorted(encoded, key=len, reverse=True)
        self._needles = b"".join(longest_first)
        offsets = np.cumsum([0] + [len(b) for b in longest_first], dtype=np.int64)
        self._needle_lengths = np.diff(offsets)
        self._needle_ids = np.array([self._id_of_bytes[b] for b in longest_first], np.int32)
        self._c_offsets = ffi.new("int64_t[]", offsets.tolist())  # read only
        self._few_ids, self._few_lengths = self._needle_ids.tolist(), self._needle_lengths.tolist()
        self._shortest = min(self._few_lengths, default=1)
        #: whether a special holds U+0000, which separates a batch's texts (utf8_documents)
        self.hold_nul = any(b"\0" in b for b in encoded)

    def find(self, data: bytes | memoryview) -> tuple[np.ndarray, np.ndarray]:
        """Where the specials occur in UTF-8 data, as a left-to-right search cuts it (the
        leftmost, the longest there, then on after it), in C: int64 starts and the int32
        index of each in the longest-first order."""
        cap = min(len(data) // self._shortest + 1, 1 << 16)
        starts, which = np.empty(cap, np.int64), np.empty(cap, np.int32)
        c_starts = ffi.from_buffer("int64_t[]", starts)
        c_which = ffi.from_buffer("int32_t[]", which)
        buf, found_starts, found_which, pos = ffi.from_buffer("uint8_t[]", data), [], [], 0
        try:
            while True:
                k = self._search(buf, len(data), pos, c_starts, c_which, cap)
                found_starts.append(starts[:k].copy())
                found_which.append(which[:k].copy())
                if k < cap:
                    return np.concatenate(found_starts), np.concatenate(found_which)
                pos = int(starts[k - 1] + self._needle_lengths[which[k - 1]])
        finally:  # data may be a memoryview: exported no longer than the search (Encoder._run)
            ffi.release(buf)

    def _search(self, buf, n: int, pos: int, starts, which, cap: int) -> int:
        """bpe_find_specials of buf[pos:n] into the C arrays starts and which (room for cap);
        returns how many it found (cap: search again from after the last)."""
        found = ffi.new("int64_t *")
        check(lib.bpe_find_specials(buf, n, pos, self._needles, self._c_offsets,
                                    len(self._needle_ids), starts, which, cap, found),
              "bpe_find_specials")
        return found[0]

    def _surely_absent(self, data: bytes) -> bool:
        """Whether short data, before any search, is known to hold no special token: a few
        `in` tests, for up to _FEW_SPECIALS specials (for more, one C search costs less than
        a pass over data for each: 256 specials, realmix, 38 against 993 ms). Past _FEW_BYTES
        the C search costs less than even one `in` test (no special in 1.66 MB: 55 against
        762 us; in 26.5 MB: 1.5 against 12.0 ms), so long data goes to it at once."""
        if len(self.encoded) > _FEW_SPECIALS or len(data) > _FEW_BYTES:
            return False
        for s in self.encoded:  # a loop, not any(...): it runs once per short call
            if s in data:
                return False
        return True

    def pieces(self, data: bytes | memoryview) -> Pieces | None:
        """The pieces of UTF-8 data between special tokens: (starts, ends, then_id), piece i
        followed by the special of id then_id[i] (-1 after the last piece); None when data
        holds no special (one piece, the whole). Lists for short data, where a few
        bytes.find cost less than arrays; int64, int64, int32 arrays for long data."""
        if not self.tokens or (isinstance(data, bytes) and self._surely_absent(data)):
            return None
        if len(data) <= _FEW_BYTES and isinstance(data, bytes):
            return self._few_pieces(data)
        at, which = self.find(data)
        if not len(at):
            return None
        starts = np.concatenate(([0], at + self._needle_lengths[which]))
        ends = np.concatenate((at, [len(data)]))
        then_id = np.concatenate((self._needle_ids[which], [-1])).astype(np.int32)
        return starts, ends, then_id

    def _few_pieces(self, data: bytes) -> Pieces | None:
        """pieces of short data, as lists."""
        starts, ends, then_id = [0], [], []
        if self._single is not None:
            single, special_id = self._single, self._id_of_bytes[self._single]
            at = data.find(single)
            while at >= 0:
                ends.append(at)
                then_id.append(special_id)
                starts.append(at + len(single))
                at = data.find(single, at + len(single))
        else:  # one C call into cffi arrays: numpy's arrays would cost more than the search
            cap = len(data) // self._shortest + 1
            at, which = _uncleared("int64_t[]", cap), _uncleared("int32_t[]", cap)
            k = self._search(data, len(data), 0, at, which, cap)
            for a, w in zip(ffi.unpack(at, k), ffi.unpack(which, k)):
                ends.append(a)
                then_id.append(self._few_ids[w])
                starts.append(a + self._few_lengths[w])
        if not ends:  # none there (more specials than _surely_absent tests)
            return None
        ends.append(len(data))
        then_id.append(-1)
        return starts, ends, then_id

    def document_pieces(self, data: bytes, doc_starts: np.ndarray, doc_ends: np.ndarray
                        ) -> tuple[Pieces, np.ndarray]:
        """The pieces of documents in one UTF-8 buffer (document i is
        data[doc_starts[i]:doc_ends[i]], in order, back to back or with bytes between them):
        each document cut at its own special tokens, so that no piece spans two documents (a
        special token that would straddle two is found in neither); and the index of each
        document's last piece."""
        n = len(doc_starts)
        found = self.pieces(data)
        if found is None:  # the usual case: one piece a document
            return (doc_starts, doc_ends, np.full(n, -1, np.int32)), np.arange(n)
        # The specials of the whole buffer are each document's own, unless one straddles two
        # documents (or what lies between them): up to that one, a search of the whole and of
        # each document agree.
        starts, ends, then_id = (np.asarray(a) for a in found)
        at, after, special_id = ends[:-1], starts[1:], then_id[:-1].astype(np.int32)
        doc = np.searchsorted(doc_starts, at, "right") - 1
        if (after > doc_ends[doc]).any():
            return self._pieces_one_by_one(data, doc_starts, doc_ends)
        # A document's pieces start at its start or after one of its specials, and end at a
        # special or at its end: the two kinds merged in order. Ends are ordered by document
        # first: a document's end and a special that opens the next one share a position.
        order_ends = np.lexsort((np.concatenate((at, doc_ends)),
                                 np.concatenate((doc, np.arange(n)))))
        # Two sorted runs: a stable sort (timsort) merges them (408 k documents: 0.6 against
        # 20 ms for the default quicksort). Where a document's start and a special's end
        # share a position, either order gives the same array.
        piece_starts = np.sort(np.concatenate((doc_starts, after)), kind="stable")
        piece_ends = np.concatenate((at, doc_ends))[order_ends]
        piece_ids = np.concatenate((special_id, np.full(n, -1, np.int32)))[order_ends]
        last_piece = np.empty(n, np.int64)
        last_piece[order_ends[order_ends >= len(at)] - len(at)] = \
            np.flatnonzero(order_ends >= len(at))
        return (piece_starts, piece_ends, piece_ids), last_piece

    def _pieces_one_by_one(self, data: bytes, doc_starts: np.ndarray, doc_ends: np.ndarray
                           ) -> tuple[Pieces, np.ndarray]:
        """document_pieces, each document searched on its own."""
        starts, ends, then_id, n_pieces = [], [], [], []
        for a, b in zip(doc_starts.tolist(), doc_ends.tolist()):
            found = self.pieces(data[a:b])
            if found is None:
                starts.append([a]), ends.append([b]), then_id.append([-1])
            else:
                starts.append(np.asarray(found[0], np.int64) + a)
                ends.append(np.asarray(found[1], np.int64) + a)
                then_id.append(np.asarray(found[2], np.int32))
            n_pieces.append(len(then_id[-1]))
        pieces = (np.concatenate(starts), np.concatenate(ends), np.concatenate(then_id))
        return pieces, np.cumsum(n_pieces) - 1

    def split(self, text: str) -> Iterator[tuple[str, bool]]:
        """Yields (piece, is_special) of a str in order; empty pieces are left out."""
        pos = 0
        for start, end in self._str_spans(text):
            if start > pos:
                yield text[pos:start], False
            yield text[start:end], True
            pos = end
        if pos < len(text):
            yield text[pos:], False


    def _str_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """(start, end) of the special tokens in text, left to right, longest first."""
        if not self.tokens:
            return
        if self._single is not None:
            single = self.tokens[0]
            at = text.find(single)
            while at >= 0:
                yield at, at + len(single)
                at = text.find(single, at + len(single))
        else:  # found in its UTF-8, their byte offsets made character offsets
            # (a lone surrogate, which a pattern may leave out, passes as three bytes)
            data = text.encode("utf-8", "surrogatepass")
            at, which = self.find(data)
            ends = at + self._needle_lengths[which]
            if len(data) != len(text):  # not ASCII: the character each byte belongs to
                lead = (np.frombuffer(data, np.uint8) & 0xC0) != 0x80
                char_of = np.append(np.cumsum(lead) - 1, len(text))
                at, ends = char_of[at], char_of[ends]
            yield from zip(at.tolist(), ends.tolist())
