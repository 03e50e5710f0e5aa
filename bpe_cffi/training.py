"""Training (docs/spec.md): word counts -> merges in the C core, and the train_bpe front door."""
from __future__ import annotations

import operator
import sys
import time
import warnings
from typing import Iterable, Mapping

import numpy as np

from ._lib import check, ffi, lib
from .counting import checked_int, count_words_arrays
from .progress import progress_bar
from .sources import PathsLike
from .counter import counts_to_arrays
from .patterns import GPT2_PATTERN
from .specials import unique_specials

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]

_MERGES_PER_CALL = 256  # merges per C call: progress and Ctrl-C are handled between calls


def check_vocab_size(vocab_size, n_specials: int) -> int:
    """vocab_size as an int, if it holds the 256 bytes and the special tokens."""
    vocab_size = checked_int(vocab_size, "vocab_size")
    if vocab_size < 256 + n_specials:
        raise ValueError(f"vocab_size={vocab_size} is too small: it must be at least 256 "
                         f"(one token per byte) + {n_specials} special token(s) = "
                         f"{256 + n_specials}")
    return vocab_size


def _run_merges(blob: bytes, offsets: np.ndarray, values: np.ndarray, n_merges: int,
                bucket_limit: int, progress: bool) -> tuple[np.ndarray, np.ndarray]:
    """The C merge loop: returns the (left, right) token ids of each merge, in order."""
    left = np.empty(n_merges, dtype=np.int32)
    right = np.empty(n_merges, dtype=np.int32)
    count = np.empty(n_merges, dtype=np.int64)
    handle = ffi.new("bpe_trainer **")
    check(lib.bpe_trainer_new(ffi.from_buffer("uint8_t[]", blob), len(blob),
                              ffi.from_buffer("int64_t[]", offsets),
                              ffi.from_buffer("int64_t[]", values), len(values), bucket_limit,
                              handle), "bpe_trainer_new")
    trainer = ffi.gc(handle[0], lib.bpe_trainer_free)
    done = 0
    n_done = ffi.new("int64_t *")
    with progress_bar(progress, total=n_merges, unit="merge", desc="merge") as bar:
        while done < n_merges:
            step = min(_MERGES_PER_CALL, n_merges - done)
            check(lib.bpe_trainer_step(trainer, step,
                                       ffi.from_buffer("int32_t[]", left[done:]),
                                       ffi.from_buffer("int32_t[]", right[done:]),
                                       ffi.from_buffer("int64_t[]", count[done:]), n_done),
                  "bpe_trainer_step")
            done += n_done[0]
            bar.update(n_done[0])
            if n_done[0] < step:
                break
    ffi.release(trainer)  # free the C state now, not whenever the GC runs
    return left[:done], right[:done]


def _learn(arrays, vocab_size: int, specials: list[str], progress: bool,
           bucket_limit: int, timing: dict | None = None) -> tuple[Vocab, Merges, int]:
    """Merges learned from word counts given as (blob, offsets, counts) arrays, laid out as
    docs/spec.md says; also the number of merges wanted. timing, if given, receives the seconds
    spent in C ("merge") and building the output ("output")."""
    vocab_size = check_vocab_size(vocab_size, len(specials))
    blob, offsets, values = arrays
    n_wanted = vocab_size - 256 - len(specials)
    # Each merge leaves one symbol fewer in the distinct words, so they cannot give more merges
    # than their bytes less the number of words that are not empty: the arrays are sized by
    # that, not by what was asked (vocab_size=2**40 asks for terabytes).
    lengths = np.diff(offsets)
    n_possible = len(blob) - int(np.count_nonzero(lengths))
    _check_pair_total(lengths, values)
    t = time.perf_counter()
    left, right = _run_merges(blob, offsets, values, min(n_wanted, n_possible), bucket_limit,
                              progress)
    t_merged = time.perf_counter()

    vocab: Vocab = {i: bytes([i]) for i in range(256)}
    merges: Merges = []
    for a, b in zip(left.tolist(), right.tolist()):
        merges.append((vocab[a], vocab[b]))
        vocab[len(vocab)] = vocab[a] + vocab[b]
    made = set(vocab.values())
    for s in specials:  # one whose bytes are a token already keeps that token's id (spec 1.1)
        if s.encode("utf-8") not in made:
            vocab[len(vocab)] = s.encode("utf-8")
    if timing is not None:
        timing.update(merge=t_merged - t, output=time.perf_counter() - t_merged)
    return vocab, merges, n_wanted


def _check_pair_total(lengths: np.ndarray, values: np.ndarray) -> None:
    """An OverflowError if the words (of these lengths and counts) hold more pair occurrences
    than an int64 counts (each word's count times its pairs, summed): every pair count of the
    merge loop is at most that sum, which keeps its 64-bit counts exact whatever the merges
    (docs/spec.md 1.4)."""
    pairs = np.maximum(lengths - 1, 0)
    # Summed as float64 products, not np.dot: a dot product is a BLAS call, which wakes
    # OpenBLAS's threads, and they spin on a core for ~0.1 s after it.
    if float(np.multiply(values, pairs, dtype=np.float64).sum()) < 2.0**62:  # far from it
        return
    total = sum(map(operator.mul, values.tolist(), pairs.tolist()))  # exactly
    if total >= 2**63:
        raise OverflowError(f"the word counts hold {total:,} pair occurrences in all (each "
                            "word's count times its pairs), more than the 2**63 - 1 that "
                            "training counts in")


def _warn_if_short(vocab: Vocab, merges: Merges, n_wanted: int, vocab_size: int,
                   stacklevel: int = 3) -> None:
    """Warns (pointing at the user's call, stacklevel frames up) if merges ran out."""
    if len(merges) < n_wanted:
        warnings.warn(f"the corpus ran out of pairs after {len(merges)} of {n_wanted} merges: "
                      f"the vocabulary has {len(vocab)} tokens, not {vocab_size}",
                      stacklevel=stacklevel)


def train_from_counts(counts: Mapping[bytes, int], vocab_size: int,
                      special_tokens: Iterable[str] = (), *, progress: bool = False,
                      _bucket_limit: int = 0) -> tuple[Vocab, Merges]:
    """Learns merges from {pre-token bytes: count} (docs/spec.md)."""
    specials = unique_specials(special_tokens)
    check_vocab_size(vocab_size, len(specials))
    vocab, merges, n_wanted = _learn(counts_to_arrays(counts), vocab_size, specials, progress,
                                     _bucket_limit)
    _warn_if_short(vocab, merges, n_wanted, vocab_size)
    return vocab, merges


def train_from_arrays(arrays, vocab_size: int, special_tokens: Iterable[str] = (), *,
                      progress: bool = False) -> tuple[Vocab, Merges]:
    """train_from_counts for counts given as count_words_arrays returns them."""
    specials = unique_specials(special_tokens)
    vocab, merges, n_wanted = _learn(arrays, vocab_size, specials, progress, 0)
    _warn_if_short(vocab, merges, n_wanted, vocab_size)
    return vocab, merges


def train_bpe(input_path: PathsLike, vocab_size: int, special_tokens: Iterable[str] = (), *,
              pattern: str = GPT2_PATTERN, num_workers: int | None = None, client=None,
              progress: bool = False, text_field: str = "text") -> tuple[Vocab, Merges]:
    """Trains byte-level BPE on UTF-8 corpus files (docs/spec.md): a path, a list of paths or
    a glob; plain text, .jsonl, .parquet, or .gz / .zst compressed text or JSON lines (see
    count_words; records' text in text_field).

    Returns vocab {id: bytes} (bytes 0-255, then one token per merge, then the special tokens)
    and the merges in creation order. progress=True shows progress bars on a terminal and
    prints where the time went. pattern, num_workers, client: see count_words (the result
    depends on neither num_workers nor client).
    """
    specials = unique_specials(special_tokens)
    check_vocab_size(vocab_size, len(specials))  # before the long part
    arrays, stats = count_words_arrays(input_path, specials, pattern=pattern,
                                       num_workers=num_workers, client=client,
                                       progress=progress, text_field=text_field,
                                       _stacklevel=4)
    return _learn_and_report(arrays, stats, vocab_size, specials, progress)


def train_from_iterator(texts: Iterable[str], vocab_size: int,
                        special_tokens: Iterable[str] = (), *, pattern: str = GPT2_PATTERN,
                        num_workers: int | None = None, progress: bool = False
                        ) -> tuple[Vocab, Merges]:
    """train_bpe for documents from an iterator (a list, a generator, a Hugging Face datasets
    column): each item is one document, so no pair crosses two items, and special tokens in
    an item still cut it. The same merges as train_bpe on a file of the same documents joined
    by a special token (one that no other special token overlaps, or the join could make an
    occurrence of the other across two documents). The iterator is read once, in batches, on
    num_workers processes (None: one per core); memory is bounded by the batches in flight,
    not by the corpus."""
    from .iterator_counting import count_iterator
    specials = unique_specials(special_tokens)
    check_vocab_size(vocab_size, len(specials))  # before the long part
    total, stats = count_iterator(texts, specials, pattern=pattern, num_workers=num_workers,
                                  progress=progress)
    arrays = total.export()
    total.release()
    return _learn_and_report(arrays, stats, vocab_size, specials, progress)


def _learn_and_report(arrays, stats, vocab_size: int, specials: list[str],
                      progress: bool) -> tuple[Vocab, Merges]:
    timing: dict = {}
    vocab, merges, n_wanted = _learn(arrays, vocab_size, specials, progress, 0, timing)
    if progress:
        print(f"bpe_cffi: pre-tokenized by {stats.pretokenizer}; {stats}; merge (C) "
              f"{timing['merge']:.2f} s, output "
              f"{timing['output']:.2f} s ({len(arrays[2]):,} distinct pre-tokens)",
              file=sys.stderr)
    _warn_if_short(vocab, merges, n_wanted, vocab_size, stacklevel=4)
    return vocab, merges
