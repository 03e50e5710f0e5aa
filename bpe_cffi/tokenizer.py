"""Tokenizer (docs/spec.md): encode and decode with learned merges, over the C encoder."""
from __future__ import annotations

import errno
import gc
import os
import stat
import threading
import time
from typing import AbstractSet, Callable, Iterable, Iterator, Mapping, Sequence, Union

import numpy as np

from .chunking import Edges, cut_stream
from .counting import checked_int, resolve_workers
from .decoder import Decoder
from .encoder import Encoder, join_runs, merges_from_ranks
from .files import (MergeNotInVocabulary, MergeParts, absolute, check_vocab, load_gpt2,
                    load_hf, load_tiktoken, merges_txt_line, save, tokenizer_file_kind,
                    tokenizer_paths)
from .patterns import GPT2_PATTERN, pretokenizer
from .specials import SpecialTokens, add_special_ids, place_specials, unique_specials

_SUBSETS_KEPT = 8  # encoders kept for allowed_special sets other than "all"
# The cache of encoded units (csrc/unit_cache.h): enough for every distinct unit of realmix
# (27.5 MB: 456 k units, 42 MB of slots and arena) and to carry a corpus's common ones.
DEFAULT_CACHE_BYTES = 64 << 20

#: allowed_special: "all" (every special token of the tokenizer) or a set of them
AllowedSpecial = Union[str, AbstractSet[str]]


class Tokenizer:
    """Byte-level BPE tokenizer: `encode` gives the same ids as tiktoken with the same ranks."""

    def __init__(self, vocab: dict[int, bytes], merges: Sequence[tuple[bytes, bytes]],
                 special_tokens: Iterable[str] | Mapping[str, int] | None = None,
                 pattern: str = GPT2_PATTERN,
                 num_threads: int | None = None, cache_bytes: int = DEFAULT_CACHE_BYTES,
                 ignore_merges: bool = False):
        """vocab: {id: token bytes}; merges: [(bytes, bytes)] by rank; special_tokens: strs
        that encode to their own id (a new id after the vocabulary's when their bytes are no
        token), or {str: id} as tiktoken gives them (each special then has that id, its
        bytes that id's token); pattern: the pre-tokenization regex, or a family's name
        (bpe_cffi.PATTERNS).
        num_threads: a long text (2 MB or more, with a pattern that has a C scanner) is cut
        at safe edges and its parts encoded at once on this many threads (None: one per
        core); so are long batches. The ids never depend on it.
        cache_bytes: the most memory kept for the ids of units (a word with the space before
        it and the punctuation after it) encoded by earlier calls, so that later calls look
        them up instead of encoding them again; 0: no cache (nor does a bound under ~170 KB
        keep anything: a share of it for each of 64 shards). The ids never depend on it.
        ignore_merges: a pre-token whose bytes are a token encodes to that token, whatever the
        merges would make of its bytes (tiktoken's rule; tokenizers' `ignore_merges`). Set when
        loading a tiktoken rank file, or a tokenizer.json that says so. A vocabulary learned by
        BPE gives the same ids either way."""
        check_vocab(vocab)
        if not isinstance(ignore_merges, bool):
            raise TypeError(f"ignore_merges must be a bool, not {type(ignore_merges).__name__}")
        self._ignore_merges = ignore_merges
        id_to_token, token_to_id = dict(vocab), {}
        for i in sorted(vocab):  # a byte string listed twice maps to its lowest id
            token_to_id.setdefault(vocab[i], i)
        if isinstance(special_tokens, Mapping):
            place_specials(special_tokens, id_to_token, token_to_id)
        ids = add_special_ids(unique_specials(special_tokens), id_to_token, token_to_id)
        # The specials that are no token of vocab, whatever their ids (a gap before them, as
        # OpenAI's encodings have): never an ordinary token, as tiktoken keeps its specials
        # apart from its ranks. (A vocabulary that holds its specials, as files give them,
        # tells them by their place: Encoder._set_whole_tokens.)
        self._fresh_specials = frozenset(i for i in ids.values() if i not in vocab)
        # Read-only: the encoder and decoder are built from these tables, so a change to them
        # would reach some calls and not others. Still dicts, for what takes only dicts
        # (tiktoken's Encoding takes token_to_id as its ranks).
        #: {id: token bytes}, special tokens included
        self.id_to_token = ReadOnlyDict(id_to_token)
        #: {token bytes: id}; a byte string listed twice has its lowest id
        self.token_to_id = ReadOnlyDict(token_to_id)
        specials = SpecialTokens(ids, ids)  # the encoder's own, not a public attribute
        self._special_tokens = ReadOnlyList(specials.tokens)
        self._special_ids = ReadOnlyDict(specials.ids)
        if isinstance(merges, MergeParts):  # as a file gave them
            self._merge_parts, self._merges = merges, None
        else:
            pairs = list(merges)
            self._merge_parts = MergeParts.of(pairs)  # checks that each is a pair of bytes
            self._merges = ReadOnlyList(tuple(m) for m in pairs)
        # Read-only, as the tables are (properties below): they are the encoder's, which a
        # change here did not reach (dtype = np.uint8 wrapped the ids without an error).
        self._vocab_size = max(self.id_to_token, default=-1) + 1
        self._pretokenizer = pretokenizer(pattern)
        self._dtype = np.uint16 if self._vocab_size <= 1 << 16 else np.uint32
        self._encoder = Encoder(self.token_to_id, self._merge_parts, self.vocab_size,
                                self.pretokenizer, specials,
                                resolve_workers(num_threads, "num_threads"),
                                _check_cache_bytes(cache_bytes), ignore_merges,
                                self._fresh_specials)
        self._decoder = Decoder(self.id_to_token, self.vocab_size)
        self._subset_encoders: dict[frozenset, Encoder] = {}
        # Added tokens that a tokenizer.json marked "special": false: encoded as every special
        # token is (tokenizers matches both kinds alike), kept only to be written so again.
        self._not_special: frozenset[str] = frozenset()
        # The files it was loaded from (absolute: the working directory may change), which
        # encode_file never writes over; copies and pickles keep them.
        self._loaded_from: list[str] = []

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges, by rank: (left token, right token); read-only, as the tables are."""
        if self._merges is None:  # loaded from a file: made when first asked for
            self._merges = ReadOnlyList(self._merge_parts.pairs())
        return self._merges

    @property
    def ignore_merges(self) -> bool:
        """Whether a pre-token whose bytes are a token is that token (see the constructor)."""
        return self._ignore_merges

    @property
    def vocab_size(self) -> int:
        """The highest id plus one (ids a vocabulary skips count too)."""
        return self._vocab_size

    @property
    def pretokenizer(self):
        """The pre-tokenizer: .name is the name of the pattern whose C scanner runs (a
        family, or one of its forms: "cl100k_tiktoken", "qwen2", ...), or "regex"."""
        return self._pretokenizer

    @property
    def dtype(self) -> type:
        """The numpy dtype of ids in arrays and files: uint16 when every id fits, else
        uint32."""
        return self._dtype

    @property
    def pattern(self) -> str:
        """The pre-tokenization pattern."""
        return self.pretokenizer.pattern

    @property
    def special_tokens(self) -> list[str]:
        """The special tokens, in the order given; read-only."""
        return self._special_tokens

    @property
    def special_ids(self) -> dict[str, int]:
        """{special token: its id}; read-only."""
        return self._special_ids

    @property
    def num_threads(self) -> int:
        """Threads a long text is encoded on."""
        return self._encoder.num_threads

    @num_threads.setter
    def num_threads(self, n: int) -> None:
        n = resolve_workers(n, "num_threads")
        for encoder in [self._encoder, *self._subset_encoders.values()]:
            encoder.num_threads = n

    @property
    def cache_bytes(self) -> int:
        """The most memory the cache of encoded units may hold (0: no cache)."""
        return self._encoder.cache_bytes

    def cache_info(self) -> dict[str, int]:
        """The cache of encoded units: {"entries", "bytes" (memory in use), "lookups" and
        "hits" (units of more than a byte looked up, and found)}."""
        return self._encoder.cache_info()

    # ---- files ----

    @classmethod
    def from_files(cls, vocab_filepath, merges_filepath,
                   special_tokens: Iterable[str] | Mapping[str, int] | None = None,
                   pattern: str = GPT2_PATTERN, **options) -> "Tokenizer":
        """Loads GPT-2 style vocab.json + merges.txt. options: num_threads, cache_bytes,
        ignore_merges (as for the constructor)."""
        # Checked first, so that an error from the files' contents alone names the file.
        special_tokens = _checked_arguments(pattern, special_tokens, **options)
        vocab, merges = load_gpt2(vocab_filepath, merges_filepath)
        tok = _named(os.fsdecode(os.fspath(merges_filepath)),
                     lambda: cls(vocab, merges, special_tokens, pattern, **options),
                     merges_txt=True)
        tok._loaded_from = [absolute(os.fsdecode(os.fspath(p)))
                            for p in (vocab_filepath, merges_filepath)]
        return tok

    @classmethod
    def load(cls, path, *, pattern: str | None = None,
             special_tokens: Iterable[str] | Mapping[str, int] | None = None,
             num_threads: int | None = None,
             cache_bytes: int = DEFAULT_CACHE_BYTES) -> "Tokenizer":
        """Loads a directory written by bpe_cffi.save (or by the CLI): tokenizer.json when
        present (it holds the specials and the pattern), else vocab.json + merges.txt, else
        tokenizer.tiktoken. Or one file, as tokenizers' Tokenizer.from_file takes one: a
        Hugging Face tokenizer.json (a name ending in .json) or a tiktoken rank file (.tiktoken).
        pattern, special_tokens: for the files that hold neither (default: GPT-2's pattern and
        none; a tiktoken file of OpenAI's wants its encoding's pattern and specials with their
        ids, as `pattern="cl100k_tiktoken", special_tokens={"<|endoftext|>": 100257}`, or
        tiktoken's own `enc._pat_str` and `enc._special_tokens`); with a tokenizer.json, giving
        them is an error. num_threads, cache_bytes: as for the constructor."""
        d = os.fsdecode(os.fspath(path))  # a bytes path too
        try:  # (a loop of links, a directory that may not be searched: the system's own error)
            is_dir = stat.S_ISDIR(os.stat(d).st_mode)
        except FileNotFoundError:
            what = "directory" if tokenizer_file_kind(d) is None else "file"
            raise FileNotFoundError(f"no such tokenizer {what}: {d!r}") from None
        if not is_dir and tokenizer_file_kind(d) is None:
            raise NotADirectoryError(f"{d!r} is a file, not a tokenizer directory (written by "
                                     "save or bpe-cffi train), a tokenizer.json or a "
                                     ".tiktoken rank file")
        # Checked here, so that an error from the files' contents alone names the file.
        special_tokens = _checked_arguments(pattern, special_tokens, num_threads=num_threads,
                                            cache_bytes=cache_bytes)
        options = {"num_threads": num_threads, "cache_bytes": cache_bytes}
        tok = _collector_paused(cls._load, d, is_dir, pattern, special_tokens, options)
        tok._loaded_from = tokenizer_paths(absolute(d))
        return tok

    @classmethod
    def _load(cls, d: str, is_dir: bool, pattern: str | None,
              special_tokens: list[str] | dict | None, options: dict) -> "Tokenizer":
        if not is_dir:  # one file, of a kind tokenizer_file_kind knows
            load_file = cls._load_hf if tokenizer_file_kind(d) == "json" else cls._load_tiktoken
            return load_file(d, pattern, special_tokens, options)
        # lexists: a broken link to tokenizer.json is an error, not a reason to read the
        # vocab.json beside it (which holds neither the specials nor the pattern).
        path = os.path.join(d, "tokenizer.json")
        if os.path.lexists(path):
            return cls._load_hf(path, pattern, special_tokens, options)
        path = os.path.join(d, "vocab.json")
        if os.path.lexists(path):
            merges_path = os.path.join(d, "merges.txt")
            vocab, merges = load_gpt2(path, merges_path)
            pattern = GPT2_PATTERN if pattern is None else pattern
            return _named(merges_path, lambda: cls(vocab, merges, special_tokens, pattern,
                                                   **options), merges_txt=True)
        path = os.path.join(d, "tokenizer.tiktoken")
        if os.path.lexists(path):
            return cls._load_tiktoken(path, pattern, special_tokens, options)
        try:  # a directory this user may not read lists nothing, or its files unreachable
            names = set(os.listdir(d))
        except PermissionError as e:
            raise PermissionError(e.errno, f"cannot read the tokenizer directory {d!r}: "
                                           f"{e.strerror}") from None
        if names & {"tokenizer.json", "vocab.json", "tokenizer.tiktoken"}:
            raise PermissionError(errno.EACCES, f"cannot reach the files of the tokenizer "
                                                f"directory {d!r}: permission denied")
        raise FileNotFoundError(f"{d!r} holds no tokenizer.json, vocab.json or tokenizer.tiktoken")

    @classmethod
    def _load_hf(cls, path: str, pattern: str | None, special_tokens, options: dict
                 ) -> "Tokenizer":
        if pattern is not None or special_tokens is not None:
            raise ValueError(f"{path} holds its own pattern and special tokens: load it "
                             "without pattern= and special_tokens=")
        vocab, merges, specials, pattern, ignore, not_special = load_hf(path)
        tok = _named(path, lambda: cls(vocab, merges, specials, pattern,
                                       ignore_merges=ignore, **options))
        tok._not_special = not_special  # written back by save
        return tok

    @classmethod
    def _load_tiktoken(cls, path: str, pattern: str | None, special_tokens, options: dict
                       ) -> "Tokenizer":
        vocab = load_tiktoken(path)
        pattern = GPT2_PATTERN if pattern is None else pattern
        return _named(path, lambda: cls(vocab, merges_from_ranks(vocab), special_tokens,
                                        pattern, ignore_merges=True, **options))

    def save(self, directory) -> list[str]:
        """Writes vocab.json, merges.txt, tokenizer.json and tokenizer.tiktoken."""
        return save(self.id_to_token, self.merges, directory, self.special_tokens, self.pattern,
                    ignore_merges=self.ignore_merges, not_special=self._not_special)

    def __len__(self) -> int:
        """The number of tokens, special tokens included."""
        return len(self.id_to_token)

    def __getstate__(self):  # for process pools and copies: rebuild the C encoder there
        # The specials that were no token of the vocabulary are left out of it and given with
        # their ids, so that they are such specials again.
        vocab = {i: t for i, t in self.id_to_token.items() if i not in self._fresh_specials}
        return (vocab, self.merges, dict(self.special_ids), self.pattern, self.num_threads,
                self.cache_bytes, self.ignore_merges, self._not_special, self._loaded_from)

    def __setstate__(self, state):
        self.__init__(*state[:7])
        self._not_special = state[7] if len(state) > 7 else frozenset()  # an older pickle
        self._loaded_from = list(state[8]) if len(state) > 8 else []

    # ---- encoding ----
    #
    # allowed_special has tiktoken's meaning: "all" (the default), or the set of special tokens
    # that encode to their own id in this call; the text of the others is encoded as ordinary
    # text. Unlike tiktoken's default, no special token raises an error.

    def encode(self, text: str, *, allowed_special: AllowedSpecial = "all") -> list[int]:
        """The ids of text, special tokens included, as a list."""
        return self._encoder_for(allowed_special).encode_list(_checked_str(text, "encode"))

    def encode_to_numpy(self, text: str, *, allowed_special: AllowedSpecial = "all"
                        ) -> np.ndarray:
        """encode as an array: uint16 when every id fits, else uint32."""
        return self._encoder_for(allowed_special).encode(
            _checked_str(text, "encode_to_numpy"), self.dtype)

    def encode_batch(self, texts: Iterable[str], *, allowed_special: AllowedSpecial = "all"
                     ) -> list[list[int]]:
        """[encode(t) for t in texts], in fewer calls: the texts are encoded together in C,
        each apart from the others, so the per-call cost is paid once and a unit that recurs
        across texts is encoded once."""
        return _collector_paused(_batch_lists, self._encoder_for(allowed_special), texts)

    def encode_batch_to_numpy(self, texts: Iterable[str], *,
                              allowed_special: AllowedSpecial = "all"
                              ) -> tuple[np.ndarray, np.ndarray]:
        """encode_batch without Python lists, for data pipelines: (ids, offsets), the ids of
        every text back to back (uint16 when every id fits, else uint32) and len(texts) + 1
        int64 offsets; text i's ids are ids[offsets[i]:offsets[i + 1]]."""
        ids, ends = join_runs(_batch_runs(self._encoder_for(allowed_special), texts,
                                          "encode_batch_to_numpy"), self.dtype)
        offsets = np.zeros(len(ends) + 1, np.int64)
        offsets[1:] = ends
        return ids, offsets

    def encode_iterable(self, iterable: Iterable[str], *,
                        allowed_special: AllowedSpecial = "all") -> Iterator[int]:
        """Lazily yields encode("".join(iterable)), encoding the stream in pieces cut at safe
        edges (chunking.cut_stream): linear in the input whatever its chunking, holding the
        text since the last safe edge plus a batch of 64 K characters (with a pattern split
        by the regex module, only a special token makes an edge: in a stream that holds none,
        the text is held until the end)."""
        encoder = self._encoder_for(allowed_special)  # a bad argument fails here, not at next()
        try:
            if isinstance(iterable, (bytes, bytearray)):  # iterable, of ints
                raise TypeError
            chunks = iter(iterable)
        except TypeError:
            raise TypeError(f"encode_iterable takes an iterable of str, not "
                            f"{type(iterable).__name__}") from None
        edges = Edges(encoder.specials.encoded, self.pretokenizer.edges, str)
        return _encoded_stream(encoder, cut_stream(chunks, edges, "encode_iterable's iterable"))

    def encode_file(self, inputs, output_path, *, num_workers: int | None = None,
                    progress: bool = False, allowed_special: AllowedSpecial = "all",
                    separator: str | None = "default", text_field: str = "text") -> int:
        """Encodes corpus files (a path, a list of paths or globs; plain text, or .jsonl,
        .parquet, .gz / .zst compressed text or JSON lines with each record's text in
        text_field) into one flat .npy of ids (uint16 when they fit, else uint32), in input
        order, written atomically, on num_workers threads (plain text with a C scanner's
        pattern, sharing this tokenizer's cache) or processes (None: one per core), in memory
        bounded by the chunks in flight. A plain file is one document, a record one
        document; between two documents go the separator's ids: "default" is <|endoftext|>
        when it is a special token of this tokenizer (else nothing), None nothing. Returns
        the number of ids."""
        from .encode_file import encode_file
        return encode_file(self, inputs, output_path, num_workers=num_workers,
                           progress=progress, allowed_special=allowed_special,
                           separator=separator, text_field=text_field)

    def _encoder_for(self, allowed_special: AllowedSpecial) -> Encoder:
        """The encoder with the special tokens a call allows (see above)."""
        if isinstance(allowed_special, str):
            if allowed_special != "all":
                raise ValueError(f'allowed_special must be "all" or a set of special tokens, '
                                 f"not {allowed_special!r}")
            return self._encoder
        try:
            if isinstance(allowed_special, (bytes, bytearray)):  # iterable, of ints
                raise TypeError
            allowed = frozenset(allowed_special)
        except TypeError:  # None, a number: not a collection of tokens
            raise TypeError(f'allowed_special must be "all" or a set of special tokens, not '
                            f"{allowed_special!r}") from None
        wrong = next((t for t in allowed if not isinstance(t, str)), None)
        if wrong is not None:  # (numpy's str_ is a str)
            raise TypeError(f"allowed_special holds {wrong!r}, not a str: a set of special "
                            "tokens' texts")
        unknown = allowed.difference(self.special_tokens)
        if unknown:
            raise ValueError(f"allowed_special names {sorted(unknown)!r}, which are not "
                             f"special tokens of this tokenizer ({self.special_tokens!r})")
        if len(allowed) == len(self.special_tokens):
            return self._encoder
        encoder = self._subset_encoders.get(allowed)
        if encoder is None:
            kept = [s for s in self.special_tokens if s in allowed]
            ids = {s: self.special_ids[s] for s in kept}
            encoder = self._encoder.with_specials(SpecialTokens(kept, ids))
            if len(self._subset_encoders) >= _SUBSETS_KEPT:
                self._subset_encoders.clear()
            self._subset_encoders[allowed] = encoder
        return encoder

    # ---- decoding ----

    def decode(self, ids: Iterable[int]) -> str:
        """Concatenates the tokens' bytes and decodes them as UTF-8 (bad bytes -> U+FFFD)."""
        return self._decoder.decode(ids)

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The tokens' bytes, concatenated."""
        return bytes(self._decoder.decode_bytes(ids))


def _refuse(self, *args, **kwargs):
    raise TypeError("the tokenizer's tables are read-only (its encoder and decoder were made "
                    "from them): change a copy, dict(table) or list(table), and make a new "
                    "Tokenizer")


class ReadOnlyDict(dict):
    """A dict that refuses changes (Tokenizer.id_to_token, token_to_id, special_ids); dict(...)
    makes a copy to change. It pickles and copies as a plain dict."""
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return dict, (dict(self),)

    def copy(self) -> dict:
        return dict(self)


class ReadOnlyList(list):
    """A list that refuses changes (Tokenizer.merges, special_tokens); list(...) makes a copy
    to change. It pickles and copies as a plain list."""
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):
        return list, (list(self),)

    def copy(self) -> list:
        return list(self)


def _check_cache_bytes(n) -> int:
    """n as an int (a numpy int too) from 0 to 2**63 - 1, the C side's int64."""
    n = checked_int(n, "cache_bytes")
    if not 0 <= n < 2**63:
        raise ValueError(f"cache_bytes must be from 0 to 2**63 - 1, got {n}")
    return n


class _CollectorPause:
    """The cyclic garbage collector paused (if it runs) while a call makes many objects that
    hold no cycles: every list made triggers its counts, and the collections it then runs walk
    every list made so far (encode_batch of realmix's 64 735 documents: 289 against 666 ms for
    the lists; Tokenizer.load of 200 000 tokens: ~0.06 s of 0.7 s).

    One call at a time holds the pause, and it ends with that call: a call that begins while
    another holds it runs without a pause of its own. A pause shared by overlapping calls and
    lifted by the last to end kept the collector off for good under calls that kept
    overlapping on two threads (cyclic garbage grew to gigabytes).

    _collector_paused takes it and gives it back in one frame, not through a `with` block,
    so that Ctrl-C cannot leave the collector off: Python raises a pending KeyboardInterrupt
    on entering a function, and one raised on entering __exit__ skipped the lifting. Each
    step that changes state is one call into C, after which an interrupt leaves, at worst,
    the pause taken and the collector on; a pause held so for over a second (a holder keeps
    the collector off but for an instant at each end) is taken as left behind, and made
    anew."""

    def __init__(self):
        self._lock = threading.Lock()  # held by the call that holds the pause
        self._suspect: tuple[threading.Lock, float] | None = None  # found held, collector on
        os.register_at_fork(after_in_child=self._after_fork)

    def take(self) -> threading.Lock | None:
        """The pause's lock, held now, if the collector runs and no other call holds the
        pause; else None."""
        lock = self._lock
        if not gc.isenabled():
            return None
        if lock.acquire(blocking=False):
            return lock
        # Held with the collector on: a holder between two steps, or one that an interrupt
        # cut short. Once that has lasted a second, a new lock (were the holder still inside,
        # the rest of its call would run unpaused: slower, no worse).
        suspect, now = self._suspect, time.monotonic()
        if suspect is None or suspect[0] is not lock:
            self._suspect = (lock, now)
        elif now - suspect[1] > 1:
            self._lock, self._suspect = threading.Lock(), None
            return self.take()
        return None

    def _after_fork(self) -> None:
        """In a child forked while a call held the pause: its thread may not run there to lift
        it (a new lock for this process; the holder, if it does run, releases its own)."""
        if self._lock.locked():
            gc.enable()
            self._lock = threading.Lock()


_collector_pause = _CollectorPause()


def _collector_paused(fn: Callable, *args):
    """fn(*args) with the collector paused, if no other call holds the pause (see above)."""
    held = _collector_pause.take()
    try:
        if held:
            gc.disable()
        return fn(*args)
    finally:
        if held:
            gc.enable()
            held.release()


def _batch_lists(encoder: Encoder, texts: Iterable[str]) -> list[list[int]]:
    """encode_batch's lists, a run of texts at a time: a run's ~0.4 M ids' object array and
    list reuse the heap's blocks, where one list of all the ids took fresh pages
    (docs/performance.md). Lists of ints hold no cycles, so the collector may be paused."""
    out: list[list[int]] = []
    for ids, ends in _batch_runs(encoder, texts, "encode_batch"):
        flat, start = encoder.as_list(ids), 0
        for end in ends.tolist():
            out.append(flat[start:end])
            start = end
    return out


def _checked_arguments(pattern: str | None, special_tokens, num_threads=None,
                       cache_bytes=DEFAULT_CACHE_BYTES, **others) -> list[str] | dict | None:
    """A loader's own arguments checked (the constructor checks any others): the special
    tokens as a list, or as a dict when given with their ids, or None."""
    resolve_workers(num_threads, "num_threads")
    _check_cache_bytes(cache_bytes)
    if pattern is not None:
        pretokenizer(pattern)
    if isinstance(special_tokens, Mapping):  # their ids are checked with the vocabulary
        unique_specials(list(special_tokens))
        return dict(special_tokens)
    return None if special_tokens is None else unique_specials(special_tokens)


def _named(path: str, make, merges_txt: bool = False):
    """make() (a Tokenizer from what a file held, its options checked already), with a
    ValueError about what the file holds (a merge that names no token, an invalid pattern)
    naming the file, and for a merge of merges.txt its line; a MemoryError names it too."""
    try:
        return make()
    except MergeNotInVocabulary as e:
        where = f"{path}:{merges_txt_line(path, e.index)}" if merges_txt else path
        raise ValueError(f"{where}: {e}") from None
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    except MemoryError as e:  # (a rank file's nested tokens make merges of many bytes)
        raise MemoryError(f"{path}: out of memory while building the tokenizer"
                          + (f" ({e})" if str(e) else "")) from None


def _encoded_stream(encoder: Encoder, pieces: Iterable[str]) -> Iterator[int]:
    """The ids of pieces of one stream (encode_iterable), a UnicodeEncodeError saying where in
    the stream it arose."""
    done = 0  # characters of the stream before the piece
    for piece in pieces:
        try:
            ids = encoder.encode_list(piece)
        except UnicodeEncodeError as e:  # its object is the piece: say where that lies
            raise UnicodeEncodeError(e.encoding, e.object, e.start, e.end,
                                     f"{e.reason} (character {done + e.start} of the "
                                     "stream)") from None
        yield from ids
        done += len(piece)


def _checked_str(text, method: str) -> str:
    """text as a str; a subclass's characters as a str of its own (its own encode or other
    methods are not what is encoded: the batch methods read the characters too)."""
    if not isinstance(text, str):
        raise TypeError(f"{method} takes str, not {type(text).__name__}")
    return text if type(text) is str else str.__str__(text)


def _batch_runs(encoder: Encoder, texts: Iterable, method: str
                ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """encoder.batch_runs of texts, or a TypeError naming method if one is no str. With a C
    scanner, items are only checked once something fails on one (str.encode and len refuse
    other types): checking realmix's 408 k lines up front, by their set of types, took 19 of
    the 192 ms of encode_batch_to_numpy."""
    if isinstance(texts, str):  # iterable, but surely meant for encode
        raise TypeError(f"{method} takes an iterable of texts, not a str (encode takes one)")
    if isinstance(texts, (bytes, bytearray)):  # iterable, of ints
        raise TypeError(f"{method} takes an iterable of str, not {type(texts).__name__}")
    texts = texts if type(texts) is list else list(texts)
    if encoder.pretokenizer.family is None:
        yield from encoder.batch_runs(_checked_strs(texts, method))
        return
    try:
        yield from encoder.batch_runs(texts)
    except TypeError:
        _checked_strs(texts, method)  # the TypeError that names the item, if one is no str
        raise


def _checked_strs(texts: list, method: str) -> list[str]:
    """texts, every item checked to be a str (by their set of types, at C speed)."""
    if set(map(type, texts)) - {str}:  # some other type, or a subclass of str
        for t in texts:
            _checked_str(t, method)
    return texts
