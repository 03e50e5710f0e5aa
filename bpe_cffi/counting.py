"""count_words: corpus files -> {pre-token bytes: count}, in a local process pool or on Dask.

The parent only plans byte ranges (chunking.py); workers read their own ranges, pre-tokenize
them (the unit fast path or the plain regex) and return compact count arrays, so no process
ever holds the whole corpus. _Tally does the counting: a local worker tallies all its ranges
(tally_group: the parent counts one group itself, count_group runs in each pool process), a
Dask task tallies one range (count_range, dask_executor.py).
"""
from __future__ import annotations

import functools
import multiprocessing
import os
import time
from collections import Counter
from typing import Iterable

import numpy as np

from .chunking import chunk_target, plan_chunks
from .pool import process_pool, spill_arrays, spill_directory, take_spilled_arrays
from .progress import progress_bar
from .sources import (PathsLike, decode_range, file_size, read_range_bytes, resolve_inputs)
from .pretokenize import (GPT2_PATTERN, ByteSpecials, compile_pattern, resolve_fast,
                          special_splitter, split_on_specials, unique_specials)
from .units import (Arrays, Counter as UnitCounter, char_classes,
                    split_units, utf8_offsets)


# With num_workers=None, the fast path starts one worker per this many bytes of input (up to
# one per core). A worker costs a process start (a fork: the larger the parent, the dearer),
# sending its counts back and merging them, while the fast path counts ~4 ms/MB. On the
# 2-core machine of the README, in a process that has been running (pytest-benchmark, a
# notebook): realmix (27 MB) trains in 0.403 s on one process against 0.431 s on two, 40 MB
# breaks even, 80 MB is 10% faster on two; in a fresh process realmix is even (medians 0.46 s).
# The plain regex path (~8 MB/s) takes one worker per core.
FAST_BYTES_PER_WORKER = 32 << 20


@functools.lru_cache(maxsize=8)
def _compiled(pattern: str, specials: tuple[str, ...]):
    return compile_pattern(pattern), special_splitter(specials), ByteSpecials(specials)


def count_text(text: str, pattern: str, specials: tuple[str, ...],
               into: Counter | None = None) -> Counter:
    """{pre-token str: count} for one piece of text, with the regex alone (the plain path),
    added to `into` when given."""
    pat, splitter, _ = _compiled(pattern, specials)
    counts: Counter = Counter() if into is None else into
    for piece, is_special in split_on_specials(text, splitter):
        if not is_special:
            counts.update(pat.findall(piece))
    return counts


class _Tally:
    """What one worker accumulates over its byte ranges: unit counts on the fast path,
    pre-token counts on the plain path. finish() turns them into pre-token count arrays, so
    the distinct units of all the ranges are split once, not once per range."""

    def __init__(self, pattern: str, specials: tuple[str, ...], fast: bool):
        self.pattern, self.specials, self.fast = pattern, specials, fast
        self.units = UnitCounter() if fast else None
        self.words: Counter = Counter()  # the plain path's pre-token counts
        self.n_bytes, self.read_s, self.tok_s = 0, 0.0, 0.0

    def add_range(self, path: str, start: int, end: int) -> None:
        t0 = time.perf_counter()
        data = read_range_bytes(path, start, end)
        t1 = time.perf_counter()
        if self.fast:
            starts, ends, _ = _compiled(self.pattern, self.specials)[2].spans(data)
            if not self.units.add_units(data, starts, ends):
                decode_range(data, path, start)  # raises, naming the offset
        else:
            count_text(decode_range(data, path, start), self.pattern, self.specials,
                       into=self.words)
        self.read_s += t1 - t0
        self.tok_s += time.perf_counter() - t1
        self.n_bytes += end - start

    def finish(self) -> tuple[Arrays, int, float, float]:
        """(word count arrays, bytes done, seconds reading, seconds pre-tokenizing)."""
        words, n_bytes, read_s, tok_s = self.finish_counter()
        t = time.perf_counter()
        arrays = words.export()
        words.release()
        return arrays, n_bytes, read_s, tok_s + time.perf_counter() - t

    def finish_counter(self) -> tuple[UnitCounter, int, float, float]:
        """finish, with the word counts left in a C counter."""
        t = time.perf_counter()
        if self.fast:
            words = split_units(self.units)
            self.units.release()  # the unit table is the larger: free it before returning
        else:
            blob, offsets = utf8_offsets(list(self.words))
            words = UnitCounter()
            words.add(blob, offsets, np.fromiter(self.words.values(), np.int64, len(self.words)))
        self.tok_s += time.perf_counter() - t
        return words, self.n_bytes, self.read_s, self.tok_s


def count_range(task) -> tuple[Arrays, int, float, float]:
    """One task: the word counts of one byte range (what each Dask task runs)."""
    path, start, end, pattern, specials, fast = task
    tally = _Tally(pattern, specials, fast)
    tally.add_range(path, start, end)
    return tally.finish()


_progress = None  # in pool workers: a shared count of bytes done, for the parent's bar


def _set_progress(counter) -> None:
    global _progress
    _progress = counter


def tally_group(tasks, report=None) -> _Tally:
    """One worker's share of the ranges, tallied together; report(n_bytes) after each range
    (in pool workers, with no report, progress goes to the shared count instead)."""
    tally = _Tally(*tasks[0][3:])
    for path, start, end, *_ in tasks:
        tally.add_range(path, start, end)
        if report is not None:
            report(end - start)
        elif _progress is not None:
            with _progress.get_lock():
                _progress.value += end - start
    return tally


def count_group(job) -> tuple[str, int, float, float]:
    """What each pool worker runs: its group's word counts as arrays, spilled to a file
    (pool.py says why); returns the file's path with the group's statistics."""
    tasks, spill_path = job
    (blob, offsets, counts), *stats = tally_group(tasks).finish()
    return (spill_arrays(spill_path, [np.frombuffer(blob, np.uint8), offsets, counts]), *stats)


def _take_group(result) -> tuple[Arrays, int, float, float]:
    """In the parent: count_group's result with its arrays read back."""
    spill_path, *stats = result
    blob, offsets, counts = take_spilled_arrays(spill_path, 3)
    return ((blob.tobytes(), offsets, counts), *stats)


def resolve_workers(num_workers: int | None, name: str = "num_workers") -> int:
    """How many workers (or threads: name says which argument) to use; None: one per core."""
    if num_workers is None:
        return os.cpu_count() or 1
    if isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise TypeError(f"{name} must be an int or None, not {type(num_workers).__name__}")
    if num_workers < 1:
        raise ValueError(f"{name} must be at least 1, got {num_workers}")
    return num_workers


class CountStats:
    """Where counting time went: summed over workers for read and pre-tokenize."""

    def __init__(self):
        self.read_s = self.pretokenize_s = self.combine_s = self.wall_s = 0.0
        self.n_bytes = self.n_files = self.bytes_sent = 0

    def __str__(self) -> str:
        return (f"read {self.read_s:.2f} s + pre-tokenize {self.pretokenize_s:.2f} s "
                f"(CPU, all workers), combine {self.combine_s:.2f} s, wall {self.wall_s:.2f} s")


def count_words(input_path: PathsLike, special_tokens: Iterable[str] = (), *,
                pattern: str = GPT2_PATTERN, num_workers: int | None = None,
                fast: bool | None = None, client=None,
                progress: bool = False) -> dict[bytes, int]:
    """Counts the pre-tokens of UTF-8 text files (SPEC 1.2-1.3): {pre-token bytes: count}.

    input_path: a path, a list of paths, or a glob (fsspec URLs too). Special tokens cut the
    text and are not counted. fast: count distinct units in C (None: whenever the pattern
    allows). client: a dask.distributed Client to count on a cluster instead of a local pool.
    The result depends on none of num_workers, fast or client.
    """
    total, _ = _count(input_path, special_tokens, pattern=pattern, num_workers=num_workers,
                      fast=fast, client=client, progress=progress)
    counts = total.to_dict()
    total.release()
    return counts


def count_words_arrays(input_path: PathsLike, special_tokens: Iterable[str] = (), *,
                       pattern: str = GPT2_PATTERN, num_workers: int | None = None,
                       fast: bool | None = None, client=None,
                       progress: bool = False) -> tuple[Arrays, CountStats]:
    """count_words as flat arrays (words back to back, offsets, counts), and where the time
    went. The workers' counts are merged in C, so no Python dict of the corpus is built."""
    total, stats = _count(input_path, special_tokens, pattern=pattern,
                          num_workers=num_workers, fast=fast, client=client, progress=progress)
    result = total.export()
    total.release()
    return result, stats


def _count(input_path: PathsLike, special_tokens: Iterable[str], *, pattern: str,
           num_workers: int | None, fast: bool | None, client,
           progress: bool) -> tuple[UnitCounter, CountStats]:
    """The word counts in a C counter, and where the time went."""
    t_start = time.perf_counter()
    paths = resolve_inputs(input_path)
    specials = tuple(unique_specials(special_tokens))
    compile_pattern(pattern)  # fail here, in the caller, on a bad pattern
    fast = resolve_fast(fast, pattern)
    workers = resolve_workers(num_workers)
    total_size = sum(file_size(p) for p in paths)
    if num_workers is None and fast:
        workers = min(workers, -(-total_size // FAST_BYTES_PER_WORKER) or 1)
    target = chunk_target(total_size, workers)
    tasks = [(p, a, b, pattern, specials, fast)
             for p in paths for a, b in plan_chunks(p, specials, pattern, target)]

    stats = CountStats()
    stats.n_files = len(paths)
    if client is not None:  # the same tasks, run by Dask
        from .dask_executor import count_on_dask
        result, stats.bytes_sent = count_on_dask(client, tasks)
        total = UnitCounter()
        total.add(*result)
        stats.n_bytes = total_size
        stats.wall_s = time.perf_counter() - t_start
        return total, stats
    if fast:
        char_classes()  # computed once here, inherited by forked workers
    total = None
    with progress_bar(progress, total=total_size, unit="B", unit_scale=True,
                      desc="pre-tokenize") as bar:
        def take(stats_of_result):
            n_bytes, read_s, tok_s = stats_of_result
            stats.read_s += read_s
            stats.pretokenize_s += tok_s
            stats.n_bytes += n_bytes

        def absorb(result):
            arrays, *rest = result
            t = time.perf_counter()
            total.add(*arrays)
            stats.combine_s += time.perf_counter() - t
            take(rest)

        n_groups = min(workers, len(tasks))
        # Ranges dealt round-robin: each worker gets a mix of the corpus. The parent counts
        # the first group itself, so its counts need no transfer and become the total.
        groups = [tasks[g::n_groups] for g in range(n_groups)]
        if n_groups <= 1:  # small inputs or one worker: no pool to start
            total, *rest = tally_group(groups[0], bar.update).finish_counter() if tasks \
                else (UnitCounter(), 0, 0.0, 0.0)
            take(rest)
        else:
            done = multiprocessing.get_context().Value("q", 0)

            def report(n_bytes):
                with done.get_lock():
                    done.value += n_bytes
                bar.update(done.value - bar.n)

            with spill_directory() as spill, \
                    process_pool(n_groups - 1, _set_progress, (done,)) as pool:
                jobs = [(g, os.path.join(spill, str(k))) for k, g in enumerate(groups[1:])]
                results = pool.imap_unordered(count_group, jobs)
                total, *rest = tally_group(groups[0], report).finish_counter()
                take(rest)
                for _ in groups[1:]:
                    while True:
                        try:
                            result = results.next(timeout=0.2)
                            break
                        except multiprocessing.TimeoutError:
                            bar.update(done.value - bar.n)
                    absorb(_take_group(result))
            bar.update(done.value - bar.n)
    stats.wall_s = time.perf_counter() - t_start
    return total, stats
