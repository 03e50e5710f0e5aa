"""Counting and training from an iterator of documents: a list, a generator, a Hugging Face
`datasets` column. Each item is one document, so no pre-token (and no pair) joins two items;
special tokens inside an item still cut it.

The iterator is consumed once, in batches of about BATCH_CHARS characters. With one worker
the batches are tallied here into one table of units, split into pre-tokens once at the end
(tally.py). With more, each batch goes to a pool process, which returns the batch's
pre-token counts, and at most two batches per worker are in flight: memory is bounded by the
batches and the distinct pre-tokens, not by the corpus.
"""
from __future__ import annotations

import collections
import os
import time
from typing import Iterable, Iterator

import numpy as np

from .counter import WordCounter
from .counting import CountStats, resolve_workers
from .patterns import GPT2_PATTERN, pretokenizer
from .pool import process_pool, spill_arrays, spill_directory, take_spilled_arrays
from .progress import progress_bar
from .specials import unique_specials
from .tally import Tally

BATCH_CHARS = 1 << 22  # characters of documents per batch
_IN_FLIGHT_PER_WORKER = 2


def _batches(texts: Iterable[str]) -> Iterator[list[str]]:
    """The documents in batches of about BATCH_CHARS characters, checked to be str."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be an iterable of documents (str), not a single "
                        f"{type(texts).__name__}")
    batch: list[str] = []
    size = 0
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"document {i} of the iterator is {type(text).__name__}, not str")
        batch.append(text)
        size += len(text)
        if size >= BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _count_batch(job: tuple[list[str], str, tuple[str, ...], str]) -> tuple[str, int, float]:
    """What each pool worker runs: one batch's pre-token counts, spilled to a file (pool.py
    says why); returns the file's path, the batch's bytes and its CPU seconds."""
    docs, pattern, specials, spill_path = job
    tally = Tally(pattern, specials)
    tally.add_documents(docs)
    (blob, offsets, counts), n_bytes, _, tok_s = tally.finish()
    spilled = spill_arrays(spill_path, [np.frombuffer(blob, np.uint8), offsets, counts])
    return spilled, n_bytes, tok_s


def count_iterator(texts: Iterable[str], special_tokens: Iterable[str] = (), *,
                   pattern: str = GPT2_PATTERN, num_workers: int | None = None,
                   progress: bool = False) -> tuple[WordCounter, CountStats]:
    """The pre-token counts of the documents in a C counter, and where the time went."""
    t_start = time.perf_counter()
    specials = tuple(unique_specials(special_tokens))
    pretok = pretokenizer(pattern)  # a bad pattern fails here, before the iterator is read
    workers = resolve_workers(num_workers)
    stats = CountStats()
    stats.pretokenizer = pretok.name
    batches = _batches(texts)
    with progress_bar(progress, total=None, unit="B", unit_scale=True,
                      desc="pre-tokenize") as bar:
        if workers == 1:
            tally = Tally(pretok.pattern, specials)
            for batch in batches:
                before = tally.n_bytes
                tally.add_documents(batch)
                bar.update(tally.n_bytes - before)
            total, stats.n_bytes, _, stats.pretokenize_s = tally.finish_counter()
        else:
            total = WordCounter()
            pending: collections.deque = collections.deque()

            def take_oldest() -> None:
                spill_path, n_bytes, tok_s = pending.popleft().get()
                blob, offsets, counts = take_spilled_arrays(spill_path, 3)
                t = time.perf_counter()
                total.add(blob.tobytes(), offsets, counts)
                stats.combine_s += time.perf_counter() - t
                stats.n_bytes += n_bytes
                stats.pretokenize_s += tok_s
                bar.update(n_bytes)

            with spill_directory() as spill, process_pool(workers) as pool:
                for k, batch in enumerate(batches):
                    if len(pending) >= _IN_FLIGHT_PER_WORKER * workers:
                        take_oldest()
                    job = (batch, pretok.pattern, specials, os.path.join(spill, str(k)))
                    pending.append(pool.apply_async(_count_batch, (job,)))
                while pending:
                    take_oldest()
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
