"""count_words: a corpus file -> {pre-token bytes: count}, pre-tokenized in a process pool.

The parent only plans byte ranges (chunking.py); each worker reads its own range, decodes it,
pre-tokenizes it and returns its counts, so no process ever holds the whole corpus.
"""
from __future__ import annotations

import functools
import multiprocessing
import os
from collections import Counter
from typing import Iterable

from tqdm import tqdm

from .chunking import chunk_target, plan_chunks
from .pretokenize import (GPT2_PATTERN, compile_pattern, special_splitter, split_on_specials,
                          unique_specials)


@functools.lru_cache(maxsize=8)
def _compiled(pattern: str, specials: tuple[str, ...]):
    return compile_pattern(pattern), special_splitter(specials)


def read_range(path: str, start: int, end: int) -> str:
    """The text of bytes [start, end) of path, with errors that say where."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    if len(data) != end - start:
        raise OSError(f"{path} changed while being read: expected {end - start} bytes at "
                      f"offset {start}, got {len(data)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not valid UTF-8: byte offset {start + e.start} "
                         f"({e.reason})") from None


def count_text(text: str, pattern: str, specials: tuple[str, ...]) -> Counter:
    """{pre-token str: count} for one piece of text."""
    pat, splitter = _compiled(pattern, specials)
    counts: Counter = Counter()
    for piece, is_special in split_on_specials(text, splitter):
        if not is_special:
            counts.update(pat.findall(piece))
    return counts


def _count_range(task) -> tuple[dict[bytes, int], int]:
    path, start, end, pattern, specials = task
    counts = count_text(read_range(path, start, end), pattern, specials)
    return {k.encode("utf-8"): v for k, v in counts.items()}, end - start


def resolve_workers(num_workers: int | None) -> int:
    if num_workers is None:
        return os.cpu_count() or 1
    if isinstance(num_workers, bool) or not isinstance(num_workers, int):
        raise TypeError(f"num_workers must be an int or None, not {type(num_workers).__name__}")
    if num_workers < 1:
        raise ValueError(f"num_workers must be at least 1, got {num_workers}")
    return num_workers


def check_input_file(path) -> str:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such file: {path!r}")
    if os.path.isdir(path):
        raise IsADirectoryError(f"expected a text file, got a directory: {path!r}")
    return path


def count_words(input_path, special_tokens: Iterable[str] = (), *, pattern: str = GPT2_PATTERN,
                num_workers: int | None = None, progress: bool = False) -> dict[bytes, int]:
    """Counts the pre-tokens of a UTF-8 text file (SPEC 1.2-1.3): {pre-token bytes: count}.

    Special tokens cut the text and are not counted. The result does not depend on
    num_workers (None: one per core).
    """
    path = check_input_file(input_path)
    specials = tuple(unique_specials(special_tokens))
    compile_pattern(pattern)  # fail here, in the caller, on a bad pattern
    workers = resolve_workers(num_workers)
    size = os.path.getsize(path)
    ranges = plan_chunks(path, specials, pattern, chunk_target(size, workers))
    tasks = [(path, a, b, pattern, specials) for a, b in ranges]

    total: dict[bytes, int] = {}
    with tqdm(total=size, unit="B", unit_scale=True, desc="pre-tokenize",
              disable=None if progress else True) as bar:
        def absorb(result):
            counts, n_bytes = result
            get = total.get
            for k, v in counts.items():
                total[k] = get(k, 0) + v
            bar.update(n_bytes)

        if workers == 1 or len(tasks) <= 1:
            for task in tasks:  # small inputs: no pool to start
                absorb(_count_range(task))
        else:
            with multiprocessing.get_context().Pool(min(workers, len(tasks))) as pool:
                for result in pool.imap_unordered(_count_range, tasks):
                    absorb(result)
    return total
