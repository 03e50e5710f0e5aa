"""Tokenizer (SPEC 2): encode and decode with learned merges, over the C encoding core."""
from __future__ import annotations

import array
import os
import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator, NoReturn, Sequence

import numpy as np

from ._lib import check, ffi, lib
from .chunking import chunk_target, edge_finder, last_safe_edge, plan_bytes, plan_chunks
from .counting import resolve_workers
from .sources import check_input_file, read_range
from .pool import process_pool, spill_directory
from .progress import progress_bar
from .files import atomic_write, load_gpt2, load_hf, load_tiktoken, merges_from_ranks, save
from .id_lists import IdLists
from .pretokenize import (GPT2_PATTERN, UNIT_LOCAL_PATTERNS, ByteSpecials, compile_pattern,
                          resolve_fast, special_splitter, split_on_specials, unique_specials)
from .units import SlotCaches, encode_gpt2, encode_gpt2_list, encode_units, utf8_offsets

_ITER_BATCH = 1 << 16  # characters gathered by encode_iterable before it looks for an edge
_THREAD_MIN_BYTES = 1 << 20  # a text is cut for threads only into parts at least this long
# Parts per thread, dealt to the threads as they free up: texts are uneven (realmix's second
# half holds 1.7x the distinct units of its first), and two parts a thread evens that out
# at the price of a few more units encoded once per part.
_PARTS_PER_THREAD = 2
# Up to this many bytes a text skips the units (units.encode_gpt2): finding the distinct units
# pays only once words repeat a lot. realmix cut into texts, per call: 2.1 against 4.1 us at
# 50 characters, 11.9 against 21.3 at 2 000, 388 against 407 at 64 000, 1 623 against 1 324
# at 256 000.
_SHORT_TEXT_BYTES = 1 << 16
_LIST_DIRECT_CHARS = 1024  # up to this many characters encode makes its list without numpy
_DECODE_IN_C = 64  # ids from which decode copies the bytes in C (fewer: a join is as fast)


class Tokenizer:
    """Byte-level BPE tokenizer: `encode` gives the same ids as tiktoken with the same ranks."""

    def __init__(self, vocab: dict[int, bytes], merges: Sequence[tuple[bytes, bytes]],
                 special_tokens: Iterable[str] | None = None, pattern: str = GPT2_PATTERN,
                 fast: bool | None = None, num_threads: int | None = None):
        """fast: encode each distinct unit once in C (None: whenever the pattern allows it).
        num_threads: on the fast path, a long text (over 2 MB) is cut at safe edges and its
        parts encoded at once on this many threads (None: one per core; the C encoder runs
        without the GIL). The ids never depend on either."""
        self._check_vocab(vocab)
        self.pattern = pattern
        self.fast = resolve_fast(fast, pattern)
        self.num_threads = resolve_workers(num_threads, "num_threads")
        self._regex = compile_pattern(pattern)
        self.special_tokens = unique_specials(special_tokens)
        self._splitter = special_splitter(self.special_tokens)
        self._byte_specials = ByteSpecials(self.special_tokens)
        self._finder = edge_finder(self.special_tokens, pattern in UNIT_LOCAL_PATTERNS, str)

        self.id_to_token: dict[int, bytes] = dict(vocab)
        self.token_to_id: dict[bytes, int] = {}
        for i in sorted(vocab):  # a byte string listed twice maps to its lowest id
            self.token_to_id.setdefault(vocab[i], i)
        self.special_ids: dict[str, int] = {}
        for s in self.special_tokens:
            b = s.encode("utf-8")
            if b not in self.token_to_id:  # SPEC 2: a fresh id when the bytes are new
                new_id = max(self.id_to_token, default=-1) + 1
                self.id_to_token[new_id] = b
                self.token_to_id[b] = new_id
            self.special_ids[s] = self.token_to_id[b]
        self._special_id_of_bytes = {s.encode("utf-8"): i for s, i in self.special_ids.items()}
        # (bytes, id) of the one special token, when there is exactly one: C cuts short texts
        # at it itself.
        self._one_special = next(iter(self._special_id_of_bytes.items())) \
            if len(self._special_id_of_bytes) == 1 else None
        self.merges = [tuple(m) for m in merges]
        self.vocab_size = max(self.id_to_token, default=-1) + 1
        self._encoder = self._build_encoder()
        # Only a vocabulary without a token for some byte can give an id of -1 to look for.
        self._missing_bytes = any(bytes([b]) not in self.token_to_id for b in range(256))
        self._dtype = np.uint16 if self.vocab_size <= 1 << 16 else np.uint32
        self._id_list = IdLists(self.vocab_size)  # encode's lists
        self._slot_caches = SlotCaches(self.num_threads)  # one per thread of a long encode
        self._decoder = None  # decode's C table of the tokens' bytes, made on first use

    # ---- construction ----

    @staticmethod
    def _check_vocab(vocab) -> None:
        if not isinstance(vocab, dict):
            raise TypeError(f"vocab must be a dict of int -> bytes, not {type(vocab).__name__}")
        for i, b in vocab.items():
            if isinstance(i, bool) or not isinstance(i, int) or i < 0 or i >= 2**31:
                raise TypeError(f"vocab ids must be ints in [0, 2**31), got {i!r}")
            if not isinstance(b, bytes):
                raise TypeError(f"vocab values must be bytes, got {type(b).__name__} for id {i}")

    def _id_of(self, token: bytes, what: str) -> int:
        try:
            return self.token_to_id[token]
        except KeyError:
            raise ValueError(f"{what} {token!r} is not in the vocabulary") from None

    def _build_encoder(self):
        byte_ids = np.array([self.token_to_id.get(bytes([b]), -1) for b in range(256)], np.int32)
        n = len(self.merges)
        left, right, merged = (np.empty(n, np.int32) for _ in range(3))
        for r, (a, b) in enumerate(self.merges):
            if not isinstance(a, bytes) or not isinstance(b, bytes):
                raise TypeError(f"merge {r} must be a pair of bytes, got {(a, b)!r}")
            left[r] = self._id_of(a, f"merge {r} names the token")
            right[r] = self._id_of(b, f"merge {r} names the token")
            merged[r] = self._id_of(a + b, f"merge {r} makes the token")
        n_ids = self.vocab_size
        out = ffi.new("bpe_encoder **")
        check(lib.bpe_encoder_new(ffi.from_buffer("int32_t[]", byte_ids),
                                  ffi.from_buffer("int32_t[]", left),
                                  ffi.from_buffer("int32_t[]", right),
                                  ffi.from_buffer("int32_t[]", merged), n, n_ids, out),
              "bpe_encoder_new")
        return ffi.gc(out[0], lib.bpe_encoder_free)

    @classmethod
    def from_files(cls, vocab_filepath, merges_filepath,
                   special_tokens: Iterable[str] | None = None,
                   pattern: str = GPT2_PATTERN) -> "Tokenizer":
        """Loads GPT-2 style vocab.json + merges.txt."""
        vocab, merges = load_gpt2(vocab_filepath, merges_filepath)
        return cls(vocab, merges, special_tokens, pattern)

    @classmethod
    def load(cls, directory) -> "Tokenizer":
        """Loads a directory written by bpe_cffi.save (or by the CLI): tokenizer.json when
        present (it holds the specials and the pattern), else vocab.json + merges.txt, else
        tokenizer.tiktoken."""
        d = os.fspath(directory)
        if not os.path.isdir(d):
            raise FileNotFoundError(f"no such tokenizer directory: {d!r}")
        if os.path.exists(os.path.join(d, "tokenizer.json")):
            vocab, merges, specials, pattern = load_hf(os.path.join(d, "tokenizer.json"))
            return cls(vocab, merges, specials, pattern)
        if os.path.exists(os.path.join(d, "vocab.json")):
            return cls.from_files(os.path.join(d, "vocab.json"), os.path.join(d, "merges.txt"))
        if os.path.exists(os.path.join(d, "tokenizer.tiktoken")):
            vocab = load_tiktoken(os.path.join(d, "tokenizer.tiktoken"))
            return cls(vocab, merges_from_ranks(vocab))
        raise FileNotFoundError(f"{d!r} holds no tokenizer.json, vocab.json or tokenizer.tiktoken")

    def save(self, directory) -> list[str]:
        """Writes vocab.json, merges.txt, tokenizer.json and tokenizer.tiktoken."""
        return save(self.id_to_token, self.merges, directory, self.special_tokens, self.pattern)

    def __len__(self) -> int:
        return len(self.id_to_token)

    def __getstate__(self):  # for process pools: rebuild the C encoder on the other side
        vocab = {i: b for i, b in self.id_to_token.items()}
        return vocab, self.merges, self.special_tokens, self.pattern, self.fast, self.num_threads

    def __setstate__(self, state):
        self.__init__(*state)

    # ---- encoding ----

    def _encode_plain(self, text: str) -> np.ndarray:
        """int32 ids of text that holds no special token, with the regex pre-tokenizer."""
        pieces = self._regex.findall(text)
        blob, offsets = utf8_offsets(pieces)
        ids = np.empty(len(blob), np.int32)
        n_out = ffi.new("int64_t *")
        check(lib.bpe_encoder_encode(self._encoder, ffi.from_buffer("uint8_t[]", blob), len(blob),
                                     ffi.from_buffer("int64_t[]", offsets), len(pieces),
                                     ffi.from_buffer("int32_t[]", ids), len(ids), n_out),
              "bpe_encoder_encode")
        return ids[:n_out[0]]

    def _encode_array(self, text: str, dtype=np.int32) -> np.ndarray:
        """The ids of text as an array of dtype (one copy: the parts are cast as joined)."""
        parts = self._encode_parts(text)
        if len(parts) == 1:
            return parts[0].astype(dtype, copy=False)
        return np.concatenate(parts, dtype=dtype, casting="unsafe") if parts \
            else np.empty(0, dtype)

    def _encode_parts(self, text: str) -> list[np.ndarray]:
        """The ids of text as int32 arrays, one after another."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, not {type(text).__name__}")
        if self.fast:
            data = text.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here
            cuts = self._thread_parts(data)
            if len(cuts) == 1:
                parts = [self._encode_utf8(data)]
            else:
                view = memoryview(data)  # slices without copies
                parts = self._on_threads(self._encode_utf8, [view[a:b] for a, b in cuts])
        else:
            parts = [np.array([self.special_ids[piece]], np.int32) if is_special
                     else self._encode_plain(piece)
                     for piece, is_special in split_on_specials(text, self._splitter)]
        if self._missing_bytes and any(len(p) and p.min() < 0 for p in parts):
            self._raise_missing_bytes(text.encode("utf-8"))
        return parts

    def _on_threads(self, fn, items: list) -> list:
        """[fn(x) for x in items], on up to num_threads threads when there are several (the C
        calls inside fn run without the GIL)."""
        if len(items) <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(min(self.num_threads, len(items))) as ex:
            return list(ex.map(fn, items))

    def _raise_missing_bytes(self, data: bytes) -> NoReturn:
        missing = sorted({b for b in data if bytes([b]) not in self.token_to_id})
        raise ValueError(f"the text holds byte(s) {', '.join(hex(b) for b in missing)} "
                         "which have no token in the vocabulary")

    def _thread_parts(self, data: bytes) -> list[tuple[int, int]]:
        """Where to cut data for the threads: safe edges (chunking.py), so the parts encode to
        exactly the ids of the whole."""
        if self.num_threads <= 1:
            return [(0, len(data))]
        n = min(_PARTS_PER_THREAD * self.num_threads, len(data) // _THREAD_MIN_BYTES)
        if n <= 1:
            return [(0, len(data))]
        return plan_bytes(data, self.special_tokens, self.pattern, -(-len(data) // n))

    def _pieces(self, data: bytes | memoryview) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """The special-free pieces of UTF-8 bytes, (starts, ends), and the id of the special
        after each (-1 after the last)."""
        starts, ends, found = self._byte_specials.spans(data)
        return starts, ends, [self._special_id_of_bytes[f] for f in found] + [-1]

    def _few_pieces(self, data: bytes) -> tuple[list[int], list[int], list[int]]:
        """_pieces as lists, for a short text (ByteSpecials.few_spans)."""
        starts, ends, found = self._byte_specials.few_spans(data)
        return starts, ends, [self._special_id_of_bytes[f] for f in found] + [-1]

    def _short_pieces(self, data: bytes) -> tuple:
        """The pieces to pass units.encode_gpt2(_list) for a short text, with
        special=self._one_special: none (the whole text, which C cuts at the one special if
        there is one: the common cases) or, with several specials, _few_pieces."""
        if self._one_special is None and self._holds_special(data):
            return self._few_pieces(data)
        return ()

    def _holds_special(self, data: bytes) -> bool:
        for s in self._special_id_of_bytes:  # a loop, not any(...): it runs once per call
            if s in data:
                return True
        return False

    def _encode_utf8(self, data: bytes | memoryview) -> np.ndarray:
        """The fast path on UTF-8 bytes: specials located on the bytes, the rest in C."""
        if isinstance(data, bytes) and len(data) <= _SHORT_TEXT_BYTES:  # no units
            return encode_gpt2(self._encoder, data, *self._short_pieces(data),
                               special=self._one_special)
        return self._encode_units(data, *self._pieces(data))

    def _encode_units(self, data, starts, ends, then_id, piece_ends=None) -> np.ndarray:
        """units.encode_units, with a slot cache lent from this tokenizer's for the call."""
        with self._slot_caches.lend() as cache:
            return encode_units(self._encoder, data, starts, ends, then_id, cache, piece_ends)

    def encode(self, text: str) -> list[int]:
        if type(text) is str and len(text) <= _LIST_DIRECT_CHARS and self.fast:
            data = text.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here
            ids = encode_gpt2_list(self._encoder, data, *self._short_pieces(data),
                                   special=self._one_special)
            if self._missing_bytes and -1 in ids:
                self._raise_missing_bytes(data)
            return ids
        return self._id_list(self._encode_parts(text))

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """[encode(t) for t in texts], in fewer calls: on the fast path a batch is encoded in
        one C call (per thread, for a batch of over 2 MB), its texts kept apart as pieces, so
        the per-call cost is paid once and a unit that recurs across texts is encoded once."""
        texts = list(texts)
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"encode_batch takes str texts, not {type(t).__name__}")
        if not self.fast:
            return [self.encode(t) for t in texts]
        results = self._on_threads(self._encode_group, self._batch_groups(texts))
        offsets = np.cumsum([0] + [len(group_ids) for group_ids, _ in results])
        ends = np.concatenate([text_ends + offset for (_, text_ends), offset
                               in zip(results, offsets)]) if results else np.empty(0, np.int64)
        return self._id_list.split([group_ids for group_ids, _ in results], ends)

    def _batch_groups(self, texts: list[str]) -> list[list[str]]:
        """The texts cut into runs of about equal length, one or more per thread (as
        _thread_parts cuts one long text). Each run is made UTF-8 by its thread, so a batch
        is never held twice over as bytes."""
        total = sum(map(len, texts))
        n = min(_PARTS_PER_THREAD * self.num_threads, total // _THREAD_MIN_BYTES, len(texts))
        if self.num_threads <= 1 or n <= 1:
            return [texts] if texts else []
        ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)))
        cuts = np.searchsorted(ends, total * np.arange(1, n) / n).tolist()
        bounds = [0] + sorted(set(c + 1 for c in cuts if c + 1 < len(texts))) + [len(texts)]
        return [texts[a:b] for a, b in zip(bounds, bounds[1:])]

    def _encode_group(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """int32 ids of texts encoded back to back, and where each text's ids end."""
        encoded = [t.encode("utf-8") for t in texts]  # lone surrogates raise here
        data = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        text_end = np.cumsum(lengths)
        if not self._holds_special(data):
            # One piece a text (a special seen across two texts lands in the other branch).
            starts, ends, then_id = text_end - lengths, text_end, np.full(len(encoded), -1)
            last_piece = np.arange(len(encoded))
        else:  # each text split at its own specials
            starts, ends, then_id, last_piece, offset = [], [], [], [], 0
            for b in encoded:
                if self._holds_special(b):
                    if len(b) <= _SHORT_TEXT_BYTES:
                        b_starts, b_ends, b_then_id = self._few_pieces(b)
                    else:
                        b_starts, b_ends, b_then_id = self._pieces(b)
                        b_starts, b_ends = b_starts.tolist(), b_ends.tolist()
                    starts += [x + offset for x in b_starts]
                    ends += [x + offset for x in b_ends]
                    then_id += b_then_id
                else:
                    starts.append(offset)
                    ends.append(offset + len(b))
                    then_id.append(-1)
                last_piece.append(len(then_id) - 1)
                offset += len(b)
        del encoded
        piece_ends = np.empty(len(then_id), np.int64)
        ids = self._encode_units(data, starts, ends, then_id, piece_ends)
        if self._missing_bytes and len(ids) and ids.min() < 0:
            self._raise_missing_bytes(data)
        return ids, piece_ends[last_piece]

    def encode_to_numpy(self, text: str) -> np.ndarray:
        """The ids as uint16 when every id fits, else uint32."""
        return self._encode_array(text, self._dtype)

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Lazily yields encode("".join(iterable)), holding only a bounded window of text.

        Text is encoded up to the last edge where more text cannot change the result
        (chunking.py); the rest waits for the next chunk.
        """
        pending: list[str] = []
        size = 0
        for chunk in iterable:
            if not isinstance(chunk, str):
                raise TypeError(f"encode_iterable takes str chunks, not {type(chunk).__name__}")
            pending.append(chunk)
            size += len(chunk)
            if size < _ITER_BATCH:
                continue
            text = "".join(pending)
            cut = last_safe_edge(text, self.special_tokens, self._finder)
            if cut:
                yield from self.encode(text[:cut])
                text = text[cut:]
            pending, size = [text], len(text)
        yield from self.encode("".join(pending))

    def encode_file(self, input_path, output_path, *, num_workers: int | None = None,
                    progress: bool = False) -> int:
        """Encodes a whole UTF-8 file into a flat .npy of ids (uint16 when they fit), in input
        order, written atomically. Returns the number of ids."""
        path = check_input_file(input_path)
        workers = resolve_workers(num_workers)
        size = os.path.getsize(path)
        ranges = plan_chunks(path, self.special_tokens, self.pattern, chunk_target(size, workers))
        dtype = np.dtype(self._dtype)
        total = 0
        output_path = os.fspath(output_path)
        with atomic_write(output_path, "wb") as f, \
                progress_bar(progress, total=size, unit="B", unit_scale=True,
                             desc="encode") as bar:
            f.write(_npy_header(dtype, 0))  # rewritten with the real length at the end
            if workers == 1 or len(ranges) <= 1:
                for a, b in ranges:
                    ids = self._encode_array(read_range(path, a, b), dtype)
                    f.write(ids)  # its buffer, not a bytes copy of it
                    total += len(ids)
                    bar.update(b - a)
            else:
                # Each range's ids come back through a file beside the output (pool.py).
                with spill_directory(os.path.dirname(os.path.abspath(output_path))) as spill, \
                        process_pool(min(workers, len(ranges)), _init_worker, (self,)) as pool:
                    tasks = [(path, a, b, os.path.join(spill, str(k)))
                             for k, (a, b) in enumerate(ranges)]
                    for part, n_ids, n_bytes in pool.imap(_encode_range, tasks):
                        with open(part, "rb") as ids:
                            shutil.copyfileobj(ids, f, 1 << 20)
                        os.unlink(part)
                        total += n_ids
                        bar.update(n_bytes)
            f.seek(0)
            f.write(_npy_header(dtype, total))
        return total

    # ---- decoding ----

    def decode(self, ids: Iterable[int]) -> str:
        """Concatenates the tokens' bytes and decodes them as UTF-8 (bad bytes -> U+FFFD)."""
        if type(ids) is list and len(ids) < _DECODE_IN_C:  # the common case, first
            return self._decode_join(ids)
        as_int64 = None
        if isinstance(ids, np.ndarray):
            if ids.ndim == 1 and ids.dtype.kind in "iu":
                as_int64 = ids.astype(np.int64, copy=False)
            else:
                ids = ids.tolist()
        else:
            if not isinstance(ids, list):
                ids = list(ids)
            if len(ids) >= _DECODE_IN_C:
                try:  # strict: only ints (or objects with __index__) go into an int64 array
                    as_int64 = np.frombuffer(array.array("q", ids), np.int64)
                except (TypeError, OverflowError):
                    pass  # the join says which id is wrong
        decoder = None
        if as_int64 is not None and len(as_int64) >= _DECODE_IN_C:
            decoder = self._c_decoder()  # None when the ids are too scattered
        if decoder is None:
            return self._decode_join(ids.tolist() if isinstance(ids, np.ndarray) else ids)
        buf = ffi.from_buffer("int64_t[]", as_int64)
        n_bytes, bad = ffi.new("int64_t *"), ffi.new("int64_t *")
        rc = lib.bpe_decoder_length(decoder, buf, len(as_int64), n_bytes, bad)
        if rc == lib.BPE_EINVAL and bad[0] >= 0:
            wrong = ids[bad[0]]
            wrong = wrong.item() if isinstance(wrong, np.generic) else wrong
            raise ValueError(f"id {wrong!r} is not in the vocabulary")
        check(rc, "bpe_decoder_length")
        data = bytearray(n_bytes[0])
        check(lib.bpe_decoder_decode(decoder, buf, len(as_int64), ffi.from_buffer(data),
                                     len(data), n_bytes), "bpe_decoder_decode")
        return data.decode("utf-8", errors="replace")

    def _decode_join(self, ids: list) -> str:
        table = self.id_to_token
        try:
            data = b"".join(map(table.__getitem__, ids))
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in table)
            raise ValueError(f"id {bad!r} is not in the vocabulary") from None
        return data.decode("utf-8", errors="replace")

    def _c_decoder(self):
        """The C table of every token's bytes by id (made on first use; two threads may both
        make one, and either serves), or None when the ids are too scattered to index."""
        if self._decoder is None:
            n_ids = self.vocab_size
            if n_ids > 8 * len(self.id_to_token) + 65536:
                self._decoder = False
            else:
                ids = np.fromiter(self.id_to_token, np.int64, len(self.id_to_token))
                tokens = list(self.id_to_token.values())
                lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
                start, length = np.zeros(n_ids, np.int64), np.full(n_ids, -1, np.int64)
                start[ids] = np.cumsum(lengths) - lengths
                length[ids] = lengths
                blob = b"".join(tokens)
                out = ffi.new("bpe_decoder **")
                check(lib.bpe_decoder_new(ffi.from_buffer("uint8_t[]", blob), len(blob),
                                          ffi.from_buffer("int64_t[]", start),
                                          ffi.from_buffer("int64_t[]", length), n_ids, out),
                      "bpe_decoder_new")
                self._decoder = ffi.gc(out[0], lib.bpe_decoder_free)
        return self._decoder or None


# ---- encode_file workers ----

_worker_tokenizer: Tokenizer | None = None


def _init_worker(tok: Tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tok
    tok.num_threads = 1  # the pool already keeps every core busy


def _encode_range(task) -> tuple[str, int, int]:
    """What each encode_file worker runs: the ids of one byte range, written to a file in
    the output's dtype (the tokenizer's); returns (that file, its number of ids, the range's
    bytes)."""
    path, start, end, part = task
    ids = _worker_tokenizer._encode_array(read_range(path, start, end), _worker_tokenizer._dtype)
    ids.tofile(part)
    return part, len(ids), end - start


def _npy_header(dtype: np.dtype, n: int) -> bytes:
    """A .npy v1.0 header of fixed size (128 bytes) for a 1-D array of n items, so the real
    length can be written over the placeholder once known."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (dtype.str, n)
    body = d + " " * (128 - 10 - len(d) - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode("latin1")
