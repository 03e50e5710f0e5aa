"""Tokenizer.encode_file: corpus files -> one flat .npy of ids, in input order, with a
separator (by default <|endoftext|>) between two files, ready for LM training.

Each file is planned into byte ranges on safe edges (chunking.py). With one worker the parent
encodes them in turn; with more, a process pool encodes them and each range's ids come back
through a file beside the output (pool.py says why). The output is written atomically: a
temporary file renamed over the output at the end.
"""
from __future__ import annotations

import os
import shutil
import struct

import numpy as np

from .chunking import Edges, chunk_target, plan_file
from .counting import resolve_workers
from .files import atomic_write
from .pool import process_pool, spill_directory
from .progress import progress_bar
from .sources import check_input_file, read_range, refuse_overwriting, resolve_inputs


DEFAULT_SEPARATOR = "<|endoftext|>"


def encode_file(tokenizer, inputs, output_path, *, num_workers: int | None = None,
                progress: bool = False, allowed_special="all", separator="default") -> int:
    """Writes the ids of UTF-8 files to output_path as one 1-D .npy (uint16 when every id
    fits, else uint32), in input order, with the separator's ids between two files; returns
    the number of ids. inputs: a path, a list of paths or globs. separator: "default"
    (<|endoftext|> when it is one of the tokenizer's special tokens, else none), a str, or
    None. The ids are those of encoding the files' texts joined by the separator (encoded
    with the same allowed_special) when the separator is an allowed special token."""
    paths = [check_input_file(p) for p in resolve_inputs(inputs)]
    output_path = os.fspath(output_path)
    refuse_overwriting([output_path], paths)
    workers = resolve_workers(num_workers)
    specials = tokenizer._encoder_for(allowed_special).specials  # checks allowed_special
    if not isinstance(allowed_special, str):
        allowed_special = frozenset(allowed_special)
    dtype = np.dtype(tokenizer.dtype)
    between = np.array(_separator_ids(tokenizer, separator, allowed_special), dtype)
    edges = Edges(specials.encoded, tokenizer.pretokenizer.edges)
    sizes = [os.path.getsize(p) for p in paths]
    target = chunk_target(sum(sizes), workers)
    ranges = [(k, a, b) for k, p in enumerate(paths) for a, b in plan_file(p, edges, target)]
    total = 0
    file_done = 0  # files whose ids are written, and the separators after them
    with atomic_write(output_path, "wb") as f, \
            progress_bar(progress, total=sum(sizes), unit="B", unit_scale=True,
                         desc="encode") as bar:
        def separators_up_to(k: int) -> None:
            """Writes the separators after each file before file k."""
            nonlocal file_done, total
            while file_done < k:
                f.write(between)
                total += len(between)
                file_done += 1

        f.write(_npy_header(dtype, 0))  # rewritten with the real length at the end
        if workers == 1 or len(ranges) <= 1:
            for k, a, b in ranges:
                separators_up_to(k)
                ids = tokenizer.encode_to_numpy(read_range(paths[k], a, b),
                                                allowed_special=allowed_special)
                f.write(ids)  # its buffer, not a bytes copy of it
                total += len(ids)
                bar.update(b - a)
        else:
            with spill_directory(os.path.dirname(os.path.abspath(output_path))) as spill, \
                    process_pool(min(workers, len(ranges)), _init_worker, (tokenizer,)) as pool:
                tasks = [(paths[k], a, b, os.path.join(spill, str(i)), allowed_special)
                         for i, (k, a, b) in enumerate(ranges)]
                for (k, _, _), (part, n_ids, n_bytes) in zip(ranges,
                                                             pool.imap(_encode_range, tasks)):
                    separators_up_to(k)
                    with open(part, "rb") as ids:
                        shutil.copyfileobj(ids, f, 1 << 20)
                    os.unlink(part)
                    total += n_ids
                    bar.update(n_bytes)
        separators_up_to(len(paths) - 1)
        f.seek(0)
        f.write(_npy_header(dtype, total))
    return total


def _separator_ids(tokenizer, separator, allowed_special) -> list[int]:
    """The ids written between two files."""
    if separator == "default":
        separator = DEFAULT_SEPARATOR if DEFAULT_SEPARATOR in tokenizer.special_ids else None
    if separator is None:
        return []
    if not isinstance(separator, str) or not separator:
        raise TypeError(f"separator must be a non-empty str or None, not {separator!r}")
    return tokenizer.encode(separator, allowed_special=allowed_special)


_worker_tokenizer = None  # in pool workers: the tokenizer, sent once at start


def _init_worker(tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tokenizer
    tokenizer.num_threads = 1  # the pool already keeps every core busy


def _encode_range(task) -> tuple[str, int, int]:
    """What each worker runs: the ids of one byte range, written to a file in the output's
    dtype; returns (that file, its number of ids, the range's bytes)."""
    path, start, end, part, allowed_special = task
    ids = _worker_tokenizer.encode_to_numpy(read_range(path, start, end),
                                            allowed_special=allowed_special)
    ids.tofile(part)
    return part, len(ids), end - start


def _npy_header(dtype: np.dtype, n: int) -> bytes:
    """A .npy v1.0 header of fixed size (128 bytes) for a 1-D array of n items, so the real
    length can be written over the placeholder once known."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (dtype.str, n)
    body = d + " " * (128 - 10 - len(d) - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode("latin1")
