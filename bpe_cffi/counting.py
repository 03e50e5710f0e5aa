"""count_words: corpus files -> {pre-token bytes: count}, in a local process pool or on Dask.

The parent only plans byte ranges (chunking.py); workers read their own ranges, count their
units (tally.py) and return compact count arrays, so no process ever holds the whole corpus.
The parent counts one group of ranges itself; a pool process counts each other group.
"""
from __future__ import annotations

import multiprocessing
import operator
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable

from .chunking import Edges, chunk_target, plan_file
from .counter import Arrays, WordCounter
from .documents import documents, jsonl_blocks, jsonl_lines_named, kind_of, parts
from .files import absolute
from .patterns import GPT2_PATTERN, pretokenizer
from .pool import (check_workers, process_pool, small_job, spill_directory,
                   take_spilled_arrays)
from .progress import progress_bar
from .sources import STDIN, PathsLike, file_size, is_url, resolve_inputs
from .specials import unique_specials
from .tally import count_group, set_progress, tally_group
from .threads import map_in_threads

# With num_workers=None and a C scanner, one worker per this many bytes of input (up to one
# per core). A worker costs a process start (a fork: the larger the parent, the dearer),
# sending its counts back and merging them, while the scanner counts ~4 ms/MB: realmix
# (27 MB) trains in 0.403 s on one process against 0.431 s on two, 40 MB breaks even, 80 MB
# is 10% faster on two (docs/performance.md). The regex path (~8 MB/s) takes one per core.
SCANNER_BYTES_PER_WORKER = 32 << 20
JSONL_BLOCK_CHARS = 1 << 22  # characters of JSON lines a worker parses and counts at once


# More workers than any machine runs at once: a pool of them only forks for a long while
# (num_workers=10**6 forked thousands of processes before any work).
MAX_WORKERS = 4096


def checked_int(value, name: str, kind: str = "an int") -> int:
    """value as an int (a numpy int too, not a bool), else a TypeError naming the argument."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{name} must be {kind}, not {type(value).__name__}")


def resolve_workers(num_workers: int | None, name: str = "num_workers") -> int:
    """How many workers (or threads: name says which argument) to use; None: one per core."""
    if num_workers is None:
        return os.cpu_count() or 1
    num_workers = checked_int(num_workers, name, "an int or None")
    if not 1 <= num_workers <= MAX_WORKERS:
        raise ValueError(f"{name} must be from 1 to {MAX_WORKERS}, got {num_workers}")
    return num_workers


class CountStats:
    """Where counting time went: summed over workers for read and pre-tokenize."""

    def __init__(self):
        self.read_s = self.pretokenize_s = self.combine_s = self.wall_s = 0.0
        self.n_bytes = self.n_files = self.bytes_sent = 0
        self.pretokenizer = ""  # which path split the text: a family's name, or "regex"

    def __str__(self) -> str:
        return (f"read {self.read_s:.2f} s + pre-tokenize {self.pretokenize_s:.2f} s "
                f"(CPU, all workers), combine {self.combine_s:.2f} s, wall {self.wall_s:.2f} s")


def count_words(input_path: PathsLike, special_tokens: Iterable[str] = (), *,
                pattern: str = GPT2_PATTERN, num_workers: int | None = None, client=None,
                progress: bool = False, text_field: str = "text") -> dict[bytes, int]:
    """Counts the pre-tokens of UTF-8 corpus files (docs/spec.md): {pre-token bytes: count}.

    input_path: a path, a list of paths, or a glob (fsspec URLs too); plain text, or by
    extension .jsonl (or .ndjson), .parquet, and .gz / .zst compressed text or JSON lines,
    whose records are documents with their text in text_field (documents.py). Special tokens
    cut the text and are not counted. pattern: a regex, or a family's name (bpe_cffi.PATTERNS).
    client: a dask.distributed Client to count plain text on a cluster instead of a local
    pool; files read as documents (and standard input) are still counted here, on local
    processes, with a warning. The result depends on neither num_workers nor client.
    """
    total, _ = _count(input_path, special_tokens, pattern, num_workers, client, progress,
                      text_field, 3)
    counts = total.to_dict()
    total.release()
    return counts


def count_words_arrays(input_path: PathsLike, special_tokens: Iterable[str] = (), *,
                       pattern: str = GPT2_PATTERN, num_workers: int | None = None,
                       client=None, progress: bool = False, text_field: str = "text",
                       _stacklevel: int = 3) -> tuple[Arrays, CountStats]:
    """count_words as flat arrays (words back to back, offsets, counts), and where the time
    went. The workers' counts are merged in C, so no Python dict of the corpus is built.
    _stacklevel: where a warning points, as warnings.warn counts from here (train_bpe: 4)."""
    total, stats = _count(input_path, special_tokens, pattern, num_workers, client, progress,
                          text_field, _stacklevel)
    result = total.export()
    total.release()
    return result, stats


def _count(input_path: PathsLike, special_tokens: Iterable[str], pattern: str,
           num_workers: int | None, client, progress: bool,
           text_field: str, stacklevel: int) -> tuple[WordCounter, CountStats]:
    """The word counts in a C counter, and where the time went: plain text files in byte
    ranges on the pool (or Dask), then the other formats' documents (_count_documents).
    stacklevel: the user's call, as warnings.warn counts from here (3: count_words's caller)."""
    if client is not None and not (callable(getattr(client, "map", None))
                                   and callable(getattr(client, "submit", None))):
        raise TypeError(f"client must be a dask.distributed.Client, not "
                        f"{type(client).__name__}")
    all_paths = resolve_inputs(input_path)
    special_tokens = unique_specials(special_tokens)  # once: an iterator is read once
    paths = [p for p in all_paths if kind_of(p) == "text"]
    read_as_documents = [p for p in all_paths if kind_of(p) != "text"]
    if client is not None and read_as_documents:
        warnings.warn(f"{len(read_as_documents)} input(s) read as documents (JSON lines, "
                      "Parquet, compressed files or standard input) are counted on local "
                      "processes: only plain text files are counted on the Dask cluster",
                      UserWarning, stacklevel=stacklevel)
    total, stats = _count_text(paths, special_tokens, pattern, num_workers, client, progress)
    if read_as_documents:
        _count_documents(read_as_documents, special_tokens, pattern, num_workers, progress,
                         text_field, total, stats)
    return total, stats


def _count_documents(paths: list[str], special_tokens: Iterable[str], pattern: str,
                     num_workers: int | None, progress: bool, text_field: str,
                     total: WordCounter, stats: CountStats) -> None:
    """Adds the counts of files read as documents (documents.py) to total and stats: their
    parts on the pool when there are several parts and workers, else (and standard input
    always) read here, with the batches counted as count_iterator does."""
    from .iterator_counting import count_iterator, count_parts  # they build on this module
    t = time.perf_counter()
    workers = resolve_workers(num_workers)
    files = [p for p in paths if p != STDIN]
    target = chunk_target(sum(file_size(p) for p in files), workers)
    file_parts = [part for p in files for part in parts(p, target)]
    here = paths if workers == 1 or len(file_parts) <= 1 else [p for p in paths if p == STDIN]
    with jsonl_lines_named(files, text_field):  # blocks of lines parsed by other processes
        if len(here) < len(paths):
            count_parts(file_parts, text_field, special_tokens, pattern, workers, progress,
                        total, stats)
        if workers > 1:  # a compressed JSON lines file: its reader only decompresses
            for path in [p for p in here if kind_of(p) == "jsonl"]:
                more, more_stats = count_iterator(
                    jsonl_blocks(path, JSONL_BLOCK_CHARS), special_tokens, pattern=pattern,
                    num_workers=workers, progress=progress, json_lines=(path, text_field))
                _take(more, more_stats, total, stats)
    here = [p for p in here if workers == 1 or kind_of(p) != "jsonl"]
    if here:
        specials = tuple(unique_specials(special_tokens))
        edges = Edges([s.encode("utf-8") for s in specials], pretokenizer(pattern).edges, str)
        docs = (d for p in here for d in documents(p, text_field, edges))
        more, more_stats = count_iterator(docs, specials, pattern=pattern,
                                          num_workers=num_workers, progress=progress)
        _take(more, more_stats, total, stats)
    stats.n_files += len(paths)
    stats.wall_s += time.perf_counter() - t


def _take(more: WordCounter, more_stats: CountStats, total: WordCounter,
          stats: CountStats) -> None:
    """Adds counts (and their statistics) to total, and frees them."""
    arrays = more.export()
    more.release()
    total.add(*arrays)
    stats.n_bytes += more_stats.n_bytes
    stats.pretokenize_s += more_stats.pretokenize_s
    stats.combine_s += more_stats.combine_s


def _count_on_threads(tasks: list, threads: int, report, take) -> WordCounter:
    """The word counts of ranges, dealt round-robin to threads that each tally and split
    their share; the shares' counts are then added up."""
    def count(group):
        return tally_group(group, report).finish_counter()

    with ThreadPoolExecutor(threads) as pool:
        results = map_in_threads(pool, count, [(tasks[g::threads],) for g in range(threads)])
    total = None
    for words, *rest in results:
        take(*rest)
        if total is None:
            total = words
        else:
            total.add(*words.export())
            words.release()
    return total


def _count_text(paths: list[str], special_tokens: Iterable[str], pattern: str,
                num_workers: int | None, client, progress: bool
                ) -> tuple[WordCounter, CountStats]:
    """The word counts of plain text files in a C counter, and where the time went."""
    t_start = time.perf_counter()
    specials = tuple(unique_specials(special_tokens))
    pretok = pretokenizer(pattern)  # a bad pattern fails here; forked workers inherit it
    workers = resolve_workers(num_workers)
    total_size = sum(file_size(p) for p in paths)
    if num_workers is None and pretok.family is not None:
        workers = min(workers, -(-total_size // SCANNER_BYTES_PER_WORKER) or 1)
    target = chunk_target(total_size, workers)
    edges = Edges([s.encode("utf-8") for s in specials], pretok.edges)
    tasks = [(p, a, b, pretok.pattern, specials)
             for p in paths for a, b in plan_file(p, edges, target)]

    stats = CountStats()
    stats.n_files = len(paths)
    stats.pretokenizer = pretok.name
    if client is not None and tasks:  # the same tasks, run by Dask
        from .dask_executor import count_on_dask
        # Workers open the files from their own working directory: a relative path is made
        # absolute here, where it was found (a worker elsewhere counted another file).
        tasks = [(p if is_url(p) else absolute(p), *rest) for p, *rest in tasks]
        result, stats.bytes_sent = count_on_dask(client, tasks)
        total = WordCounter()
        total.add(*result)
        stats.n_bytes = total_size
        stats.wall_s = time.perf_counter() - t_start
        return total, stats
    with progress_bar(progress, total=total_size, unit="B", unit_scale=True,
                      desc="pre-tokenize") as bar:
        def take(n_bytes, read_s, tok_s):
            stats.read_s += read_s
            stats.pretokenize_s += tok_s
            stats.n_bytes += n_bytes

        n_groups = min(workers, len(tasks))
        # Ranges dealt round-robin: each worker gets a mix of the corpus. The parent counts
        # the first group itself, so its counts need no transfer and become the total.
        groups = [tasks[g::n_groups] for g in range(n_groups)]
        threads = min(resolve_workers(None), len(tasks)) if num_workers is None else 1
        if n_groups <= 1 and threads > 1 and pretok.family is not None:
            # Below a process's worth: threads of this process, since the C scan runs
            # without the GIL (count_words of realmix: 140-164 against 201-204 ms).
            total = _count_on_threads(tasks, threads, bar.update, take)
        elif n_groups <= 1:  # small inputs or one worker: no pool to start
            if not tasks:
                total = WordCounter()
            else:
                total, *rest = tally_group(groups[0], bar.update).finish_counter()
                take(*rest)
        else:
            done = multiprocessing.get_context().Value("q", 0)

            def report(n_bytes):
                with done.get_lock():
                    done.value += n_bytes
                bar.update(done.value - bar.n)

            with spill_directory() as spill, \
                    process_pool(n_groups - 1, set_progress, (done,)) as pool:
                jobs = [small_job((g, os.path.join(spill, str(k))), spill)
                        for k, g in enumerate(groups[1:])]
                results = pool.imap_unordered(count_group, jobs)
                total, *rest = tally_group(groups[0], report).finish_counter()
                take(*rest)
                for _ in groups[1:]:
                    while True:
                        try:
                            spill_path, *rest = results.next(timeout=0.2)
                            break
                        except multiprocessing.TimeoutError:
                            bar.update(done.value - bar.n)
                            check_workers(pool)
                    blob, offsets, counts = take_spilled_arrays(spill_path, 3)
                    t = time.perf_counter()
                    total.add(blob.tobytes(), offsets, counts)
                    stats.combine_s += time.perf_counter() - t
                    take(*rest)
            bar.update(done.value - bar.n)
    stats.wall_s = time.perf_counter() - t_start
    return total, stats
