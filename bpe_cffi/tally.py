"""What a counting worker runs: the word counts of byte ranges of corpus files.

A Tally accumulates one worker's ranges: the units of each range (csrc/units.h) in one C
counter, split into pre-tokens once at the end, so the distinct units of all the ranges are
split once, not once per range. Units can be all distinct where their pre-tokens are not
(numbers, dotted names: 128 MB of 12-digit numbers held 10 M units of 1 000 pre-tokens, and
2.4 GB), so once the counter holds _UNITS_MAX of them they are split into the pre-token
counts so far and the counter starts afresh: memory is bounded by that and the distinct
pre-tokens, not by the corpus. With a pattern split by the regex module, each pre-token the
regex finds is its own unit. The local pool (counting.py) gives each worker a group of ranges;
a Dask task (dask_executor.py) tallies one range.
"""
from __future__ import annotations

import time
from typing import Iterable

import numpy as np

from .counter import Arrays, WordCounter, text_error, utf8_documents, utf8_offsets
from .patterns import pretokenizer
from .pool import pool_job, spill_arrays, stopping
from .sources import decode_range, read_range_bytes
from .specials import SpecialTokens

_REGEX_BATCH = 1 << 20  # pre-tokens a pattern without a scanner finds, counted at once
# Distinct units held before they are split (see above); the check comes after each range or
# batch, so a worker holds at most this many and one range's. realmix's 27.5 MB holds 456 k,
# the 300 MB corpus made from it 0.62 M: text like theirs is split once, at the end.
_UNITS_MAX = 1 << 20

# A range task: (path, start, end, pattern, special tokens)
Task = tuple[str, int, int, str, tuple[str, ...]]


class Tally:
    """The unit counts of byte ranges, and where the time went."""

    def __init__(self, pattern: str, specials: tuple[str, ...]):
        self.pretokenizer = pretokenizer(pattern)
        self.specials = SpecialTokens(specials)
        self.units = WordCounter()
        self.words: WordCounter | None = None  # pre-token counts of the units split so far
        self.n_bytes, self.read_s, self.tok_s = 0, 0.0, 0.0

    def add_range(self, path: str, start: int, end: int) -> None:
        """Counts the units of bytes [start, end) of path."""
        t0 = time.perf_counter()
        data = read_range_bytes(path, start, end)
        t1 = time.perf_counter()
        if self.pretokenizer.family is not None:
            pieces = self.specials.pieces(data)
            starts, ends = ([0], [len(data)]) if pieces is None else pieces[:2]
            if not self.units.add_units(self.pretokenizer.scanner, data, starts, ends):
                decode_range(data, path, start)  # raises, naming the offset
            self._bound_units()
        else:
            text = decode_range(data, path, start)
            self._add_pre_tokens(piece for piece, is_special in self.specials.split(text)
                                 if not is_special)
        self.read_s += t1 - t0
        self.tok_s += time.perf_counter() - t1
        self.n_bytes += end - start

    def add_documents(self, docs: list[str]) -> None:
        """Counts the units of each document apart: no unit joins two of them."""
        t = time.perf_counter()
        if self.pretokenizer.family is not None:
            data, doc_starts, doc_ends = utf8_documents(docs, not self.specials.hold_nul)
            (starts, ends, _), _ = self.specials.document_pieces(data, doc_starts, doc_ends)
            self.units.add_units(self.pretokenizer.scanner, data, starts, ends)
            self._bound_units()
            self.n_bytes += int(doc_ends.sum() - doc_starts.sum())
        else:
            try:
                self._add_pre_tokens(piece for d in docs
                                     for piece, is_special in self.specials.split(d)
                                     if not is_special)
            except UnicodeEncodeError as e:
                raise text_error(docs, e) from None
            self.n_bytes += sum(len(d.encode("utf-8")) for d in docs)
        self.tok_s += time.perf_counter() - t

    def _add_pre_tokens(self, pieces: Iterable[str]) -> None:
        """Counts the pre-tokens the regex finds in pieces of text, each its own unit, in
        batches of at most _REGEX_BATCH: a list of a range's pre-tokens took ~25 times its
        text's bytes (a 110 MB file with no special token: 2.8 GB)."""
        for tokens in self.pretokenizer.pre_token_batches(pieces, _REGEX_BATCH):
            blob, offsets = utf8_offsets(tokens)
            self.units.add_units(self.pretokenizer.scanner, blob, offsets[:-1], offsets[1:])

    def _split_units(self) -> None:
        """Adds the units held, split, to the pre-token counts, and frees their table (the
        larger of the two)."""
        self.words = self.units.split_units(self.pretokenizer.scanner, self.words)
        self.units.release()

    def _bound_units(self) -> None:
        """Splits the units held once there are _UNITS_MAX, and starts a new table."""
        if len(self.units) >= _UNITS_MAX:
            self._split_units()
            self.units = WordCounter()

    def finish_counter(self) -> tuple[WordCounter, int, float, float]:
        """(the pre-token counts in a C counter, bytes done, seconds reading, seconds
        pre-tokenizing). The Tally is spent."""
        t = time.perf_counter()
        self._split_units()
        self.tok_s += time.perf_counter() - t
        return self.words, self.n_bytes, self.read_s, self.tok_s

    def finish(self) -> tuple[Arrays, int, float, float]:
        """finish_counter, with the counts as Arrays."""
        words, n_bytes, read_s, tok_s = self.finish_counter()
        t = time.perf_counter()
        arrays = words.export()
        words.release()
        return arrays, n_bytes, read_s, tok_s + time.perf_counter() - t


def count_range(task: Task) -> tuple[Arrays, int, float, float]:
    """The word counts of one range (what each Dask task runs)."""
    path, start, end, pattern, specials = task
    tally = Tally(pattern, specials)
    tally.add_range(path, start, end)
    return tally.finish()


_progress = None  # in pool workers: a shared count of bytes done, for the parent's bar


def set_progress(counter) -> None:
    """Pool initializer: where workers add the bytes they have done."""
    global _progress
    _progress = counter


def tally_group(tasks: list[Task], report=None) -> Tally:
    """One worker's share of the ranges, tallied together; report(n_bytes) after each range
    (in pool workers, with no report, progress goes to the shared count instead; the rest
    is left undone once the pool is stopping)."""
    tally = Tally(*tasks[0][3:])
    for path, start, end, *_ in tasks:
        if stopping():
            break
        tally.add_range(path, start, end)
        if report is not None:
            report(end - start)
        elif _progress is not None:
            with _progress.get_lock():
                _progress.value += end - start
    return tally


@pool_job
def count_group(job) -> tuple[str, int, float, float]:
    """What each pool worker runs: its group's word counts, spilled to a file (pool.py says
    why); returns the file's path with the group's statistics."""
    tasks, spill_path = job
    (blob, offsets, counts), *stats = tally_group(tasks).finish()
    return (spill_arrays(spill_path, [np.frombuffer(blob, np.uint8), offsets, counts]), *stats)
