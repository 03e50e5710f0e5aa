"""Tokenizer.encode_file: a whole corpus file -> one flat .npy of ids, in input order.

The file is planned into byte ranges on safe edges (chunking.py). With one worker the parent
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
from .sources import check_input_file, read_range, refuse_overwriting


def encode_file(tokenizer, input_path, output_path, *, num_workers: int | None = None,
                progress: bool = False, allowed_special="all") -> int:
    """Writes the ids of a UTF-8 file to output_path as a 1-D .npy (uint16 when every id fits,
    else uint32); returns the number of ids."""
    path = check_input_file(input_path)
    output_path = os.fspath(output_path)
    refuse_overwriting([output_path], [path])
    workers = resolve_workers(num_workers)
    size = os.path.getsize(path)
    specials = tokenizer._encoder_for(allowed_special).specials  # checks allowed_special
    if not isinstance(allowed_special, str):
        allowed_special = frozenset(allowed_special)
    edges = Edges(specials.encoded, tokenizer.pretokenizer.edges)
    ranges = plan_file(path, edges, chunk_target(size, workers))
    dtype = np.dtype(tokenizer.dtype)
    total = 0
    with atomic_write(output_path, "wb") as f, \
            progress_bar(progress, total=size, unit="B", unit_scale=True, desc="encode") as bar:
        f.write(_npy_header(dtype, 0))  # rewritten with the real length at the end
        if workers == 1 or len(ranges) <= 1:
            for a, b in ranges:
                ids = tokenizer.encode_to_numpy(read_range(path, a, b),
                                                allowed_special=allowed_special)
                f.write(ids)  # its buffer, not a bytes copy of it
                total += len(ids)
                bar.update(b - a)
        else:
            with spill_directory(os.path.dirname(os.path.abspath(output_path))) as spill, \
                    process_pool(min(workers, len(ranges)), _init_worker, (tokenizer,)) as pool:
                tasks = [(path, a, b, os.path.join(spill, str(k)), allowed_special)
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
