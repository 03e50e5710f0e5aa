"""Counting and training from an iterator of documents: a list, a generator, a Hugging Face
`datasets` column. Each item is one document, so no pre-token (and no pair) joins two items;
special tokens inside an item still cut it.

The iterator is consumed once, in batches of about BATCH_CHARS characters. The parent tallies
batches into one table of units, split into pre-tokens at the end or each time it holds a
million (tally.py): all of them with one worker, the first ones with more. The rest go to a
pool, each batch to a process that returns its pre-token counts, with at most two batches per
worker in flight (the parent keeps each until its counts are back, so as to name a text that
has no UTF-8): memory is bounded by the batches and the distinct pre-tokens, not by the corpus.
"""
from __future__ import annotations

import collections
import contextlib
import os
import time
from typing import Iterable, Iterator

import numpy as np

from .chunking import Edges
from .counter import WordCounter, text_error
from .documents import JsonLines, Part, documents, jsonl_block_documents
from .counting import SCANNER_BYTES_PER_WORKER, CountStats, resolve_workers
from .patterns import GPT2_PATTERN, pretokenizer
from .pool import (process_pool, pool_job, result, results, small_job, spill_arrays,
                   spill_directory, take_spilled_arrays)
from .progress import progress_bar
from .specials import unique_specials
from .tally import Tally

BATCH_CHARS = 1 << 22  # characters of documents per batch
_DOCUMENT_CHARS = 16  # what a document counts for in a batch beside its characters
_IN_FLIGHT_PER_WORKER = 2


def batches(texts: Iterable[str], chars: int = 0, item_type: type = str
            ) -> Iterator[list[str]]:
    """The documents in batches of about chars characters (BATCH_CHARS if 0), checked to be
    str (or item_type), a subclass's taken as the plain type. A document counts
    _DOCUMENT_CHARS characters more than its length, for what it costs beside its text (its
    place in the list, its offsets): a run of empty documents closes batches too."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be an iterable of documents (str), not a single "
                        f"{type(texts).__name__}")
    chars = chars or BATCH_CHARS
    batch: list[str] = []
    size = 0
    for i, text in enumerate(texts):
        if type(text) is not item_type:
            if not isinstance(text, item_type):
                raise TypeError(f"document {i} of the iterator is {type(text).__name__}, not "
                                f"{item_type.__name__}")
            # A subclass's characters as a plain str: batches go to pool workers pickled, and
            # a class defined in a function cannot be.
            text = str.__str__(text) if item_type is str else item_type(text)
        batch.append(text)
        size += len(text) + _DOCUMENT_CHARS
        if size >= chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _add_spilled(result: tuple[str, int, float], total: WordCounter, stats: CountStats,
                 bar) -> None:
    """Adds a worker's spilled counts (and its statistics) to total."""
    spill_path, n_bytes, tok_s = result
    blob, offsets, counts = take_spilled_arrays(spill_path, 3)
    t = time.perf_counter()
    total.add(blob.tobytes(), offsets, counts)
    stats.combine_s += time.perf_counter() - t
    stats.n_bytes += n_bytes
    stats.pretokenize_s += tok_s
    bar.update(n_bytes)


@pool_job
def _count_batch(job: tuple[list[str], str, tuple[str, ...], str, JsonLines | None]
                 ) -> tuple[str, int, float]:
    """What each pool worker runs: one batch's pre-token counts, spilled to a file (pool.py
    says why); returns the file's path, the batch's bytes and its CPU seconds. With
    json_lines, the batch's items are blocks of JSON lines, parsed here."""
    docs, pattern, specials, spill_path, json_lines = job
    tally = Tally(pattern, specials)
    tally.add_documents(_parsed(docs, json_lines))
    (blob, offsets, counts), n_bytes, _, tok_s = tally.finish()
    spilled = spill_arrays(spill_path, [np.frombuffer(blob, np.uint8), offsets, counts])
    return spilled, n_bytes, tok_s


@pool_job
def _count_part(job: tuple[Part, str, str, tuple[str, ...], str]) -> tuple[str, int, float]:
    """What each pool worker runs for a part of a file read as documents (documents.py):
    its pre-token counts, spilled to a file; returns the file's path, the part's bytes of
    text and its CPU seconds."""
    part, text_field, pattern, specials, spill_path = job
    tally = Tally(pattern, specials)
    edges = Edges([s.encode("utf-8") for s in specials], tally.pretokenizer.edges, str)
    for batch in batches(documents(part[0], text_field, edges, part)):
        tally.add_documents(batch)
    (blob, offsets, counts), n_bytes, _, tok_s = tally.finish()
    spilled = spill_arrays(spill_path, [np.frombuffer(blob, np.uint8), offsets, counts])
    return spilled, n_bytes, tok_s


def count_parts(file_parts: list[Part], text_field: str, special_tokens: Iterable[str],
                pattern: str, workers: int, progress: bool, total: WordCounter,
                stats: CountStats) -> None:
    """Adds the counts of parts of files read as documents to total, each part read and
    counted by a pool process (reading, decompressing and parsing on every core)."""
    specials = tuple(unique_specials(special_tokens))
    pattern = pretokenizer(pattern).pattern
    with progress_bar(progress, total=None, unit="B", unit_scale=True,
                      desc="pre-tokenize") as bar, spill_directory() as spill, \
            process_pool(min(workers, len(file_parts))) as pool:
        jobs = [small_job((part, text_field, pattern, specials, os.path.join(spill, str(k))),
                          spill) for k, part in enumerate(file_parts)]
        for spilled in results(pool, pool.imap_unordered(_count_part, jobs)):
            _add_spilled(spilled, total, stats, bar)


def _numbered(error: UnicodeEncodeError, batch: list[str], first: int) -> UnicodeEncodeError:
    """A document's own UnicodeEncodeError (a lone surrogate), saying also which document of
    the iterator it is (batch begins with document `first`): in a long iterator, the text
    alone seldom tells."""
    for i, text in enumerate(batch):
        if text is error.object:
            return UnicodeEncodeError(error.encoding, error.object, error.start, error.end,
                                      f"{error.reason} (document {first + i} of the iterator)")
    return error


def _parsed(items: list[str], json_lines: JsonLines | None) -> list[str]:
    """The documents of a batch: the items, or the records of its blocks of JSON lines."""
    if json_lines is None:
        return items
    where, text_field = json_lines
    return [d for block in items for d in jsonl_block_documents(block, where, text_field)]


def count_iterator(texts: Iterable[str], special_tokens: Iterable[str] = (), *,
                   pattern: str = GPT2_PATTERN, num_workers: int | None = None,
                   progress: bool = False, json_lines: JsonLines | None = None
                   ) -> tuple[WordCounter, CountStats]:
    """The pre-token counts of the documents in a C counter, and where the time went.

    The parent tallies batches itself until, with num_workers=None and a C scanner, the text
    passes SCANNER_BYTES_PER_WORKER (as count_words, a pool costs about what it saves below
    that: realmix, 27.5 MB, trains in 0.71-0.75 s on one process against 0.89-0.95 s with a
    pool of two), and then hands the rest to the pool. json_lines=(where, text_field): the
    items are UTF-8 blocks of JSON lines (documents.jsonl_blocks), decoded and parsed where
    they are counted, so that a compressed file's reader only decompresses."""
    t_start = time.perf_counter()
    specials = tuple(unique_specials(special_tokens))
    pretok = pretokenizer(pattern)  # a bad pattern fails here, before the iterator is read
    workers = resolve_workers(num_workers)
    alone = SCANNER_BYTES_PER_WORKER if num_workers is None and pretok.family else 0
    stats = CountStats()
    stats.pretokenizer = pretok.name
    tally = Tally(pretok.pattern, specials)  # the parent's own share
    total = WordCounter()
    pending: collections.deque = collections.deque()

    with progress_bar(progress, total=None, unit="B", unit_scale=True,
                      desc="pre-tokenize") as bar, contextlib.ExitStack() as stack:
        def take_oldest() -> None:
            pending_result, batch, first = pending.popleft()
            try:
                spilled = result(pool, pending_result)
            except UnicodeEncodeError as e:  # a worker's is cut short (pool.WorkerEncodeError)
                if batch is None:
                    raise
                raise _numbered(text_error(batch, e), batch, first) from None
            _add_spilled(spilled, total, stats, bar)

        pool = spill = None
        seen = 0  # the documents of the batches before this one
        for k, batch in enumerate(batches(texts, item_type=bytes if json_lines else str)):
            batch_first, seen = seen, seen + len(batch)
            if workers == 1 or tally.n_bytes < alone:
                before = tally.n_bytes
                try:
                    tally.add_documents(_parsed(batch, json_lines))
                except UnicodeEncodeError as e:  # the document's own (Tally.add_documents)
                    if json_lines:
                        raise
                    raise _numbered(e, batch, batch_first) from None
                bar.update(tally.n_bytes - before)
                continue
            if pool is None:
                spill = stack.enter_context(spill_directory())
                pool = stack.enter_context(process_pool(workers))
            if len(pending) >= _IN_FLIGHT_PER_WORKER * workers:
                take_oldest()
            job = small_job((batch, pretok.pattern, specials, os.path.join(spill, str(k)),
                             json_lines), spill)
            # The batch is kept until its result is in, to name a text that has no UTF-8.
            pending.append((pool.apply_async(_count_batch, (job,)),
                            None if json_lines else batch, batch_first))
        while pending:
            take_oldest()
    words, n_bytes, _, tok_s = tally.finish_counter()
    if pool is None:  # all counted here: the parent's counter is the total
        total.release()
        total = words
    else:
        arrays = words.export()
        words.release()
        total.add(*arrays)
    stats.n_bytes += n_bytes
    stats.pretokenize_s += tok_s
    stats.wall_s = time.perf_counter() - t_start
    return total, stats


def count_words_from_iterator(texts: Iterable[str], special_tokens: Iterable[str] = (), *,
                              pattern: str = GPT2_PATTERN, num_workers: int | None = None,
                              progress: bool = False) -> dict[bytes, int]:
    """count_words for documents from an iterator (each item one document):
    {pre-token bytes: count}. The iterator is read once, in batches, on num_workers
    processes (None: one per core); memory is bounded by the batches in flight."""
    total, _ = count_iterator(texts, special_tokens, pattern=pattern, num_workers=num_workers,
                              progress=progress)
    counts = total.to_dict()
    total.release()
    return counts
