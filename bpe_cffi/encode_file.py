"""Tokenizer.encode_file: corpus files -> one flat .npy of ids, in input order, with a
separator (by default <|endoftext|>) between two files, ready for LM training.

Each file is planned into byte ranges on safe edges (chunking.py). With one worker the parent
encodes them in turn. With more, the byte ranges of plain text files with a C scanner's
pattern are encoded on threads of this process, which share the tokenizer's cache (a unit the
corpus holds is then encoded once, not once a process) and hand their ids straight to the
output. Inputs whose work holds the GIL for long (documents parsed in Python, patterns split
by the regex module, runs of small files: a few lines of Python a file) go to a process pool,
and each part's ids come back through a file beside the output (pool.py says why). The
output is written atomically: a temporary file renamed over the output at the end.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import os
import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import numpy as np

from .chunking import Edges, chunk_target, plan_file
from .counting import resolve_workers
from .documents import documents, jsonl_lines_named, kind_of, parts
from .encoder import MissingBytes
from .files import absolute, atomic_write
from .iterator_counting import batches
from .pool import process_pool, pool_job, results, small_job, spill_directory
from .progress import progress_bar
from .sources import (STDIN, decode_range, file_size, read_range_bytes, read_range_into,
                      refuse_overwriting, resolve_inputs)
from .threads import submit_or_run


DEFAULT_SEPARATOR = "<|endoftext|>"
_DOCUMENT_BATCH_CHARS = 1 << 22  # characters of documents encoded in one call
# The most bytes of text in one job on the threads (_on_threads): a running job holds the
# text and room for an id a byte, and a finished one its ids until they are written. 4 MB
# rather than 16: the 300 MB corpus peaks at 179 against 251 MB (173 MB with the buffers of
# _Scratch), and less memory is touched for the first time (docs/performance.md).
_THREAD_RANGE_BYTES = 4 << 20
_WRITE_BACK_BYTES = 16 << 20  # output written between two requests to write it back


def encode_file(tokenizer, inputs, output_path, *, num_workers: int | None = None,
                progress: bool = False, allowed_special="all", separator="default",
                text_field: str = "text") -> int:
    """Writes the ids of corpus files to output_path as one 1-D .npy (uint16 when every id
    fits, else uint32), in input order, with the separator's ids between two documents;
    returns the number of ids. inputs: a path, a list of paths or globs; a plain text file is
    one document, a record of the other formats (documents.py) one document each.
    separator: "default" (<|endoftext|> when it is one of the tokenizer's special tokens,
    else none), a str, or None. The separator is encoded with every special token allowed,
    so a special token stays one id between documents even when allowed_special makes the
    documents' own special tokens text; each document is encoded on its own (nothing joins
    across two)."""
    paths = resolve_inputs(inputs)  # each checked there
    output_path = os.fsdecode(os.fspath(output_path))  # a bytes path too
    refuse_overwriting([output_path], paths)
    refuse_overwriting([output_path], tokenizer._loaded_from, "the tokenizer's file")
    workers = resolve_workers(num_workers)
    specials = tokenizer._encoder_for(allowed_special).specials  # checks allowed_special
    if not isinstance(allowed_special, str):  # read once (an iterator is spent by now)
        allowed_special = frozenset(specials.tokens)
    dtype = np.dtype(tokenizer.dtype)
    out = _IdsFile(dtype, _separator_ids(tokenizer, separator))
    edges = Edges(specials.encoded, tokenizer.pretokenizer.edges)
    sizes = {p: file_size(p) for p in paths if p != STDIN}  # (one stat, or request, a file)
    target = chunk_target(sum(sizes[p] for p in paths if p != STDIN), workers)
    with atomic_write(output_path, "wb") as f, contextlib.ExitStack() as stack, \
            progress_bar(progress, total=None, unit="B", unit_scale=True, desc="encode") as bar, \
            jsonl_lines_named(paths, text_field):
        out.start(f)
        if workers == 1:
            for path in paths:
                _encode_here(tokenizer, path, edges, target, text_field, allowed_special, out,
                             bar)
        else:
            spill = stack.enter_context(
                spill_directory(os.path.dirname(absolute(output_path))))
            pool = None  # started when a run of inputs first needs it
            # Runs of inputs between standard inputs (which only this process can read) go to
            # the pool as one ordered list of jobs: every file's ranges or parts.
            for is_stdin, run in itertools.groupby(paths, lambda p: p == STDIN):
                run = list(run)
                # Plain files of a range or more, with a C scanner: each range goes to a
                # thread (below), in smaller ranges.
                threads = tokenizer.pretokenizer.family is not None and not is_stdin and \
                    all(kind_of(p) == "text" and sizes[p] >= target for p in run)
                run_target = min(target, _THREAD_RANGE_BYTES) if threads else target
                jobs = [] if is_stdin else _jobs(run, edges, run_target, text_field,
                                                 allowed_special, out.between.tolist(), spill)
                if len(jobs) <= 1:  # here, where a long text takes every thread
                    planned = [job[2:4] for job in jobs if job[1] == "text"]
                    for path in run:  # (one path: jobs of several would be one "files" job)
                        _encode_here(tokenizer, path, edges, target, text_field,
                                     allowed_special, out, bar, planned or None)
                    continue
                if threads:  # (every job is then a "text" job)
                    done = _on_threads(tokenizer, jobs, min(workers, len(jobs)),
                                       allowed_special)
                else:
                    if pool is None:  # no more processes than jobs, when this run is all
                        size = workers if STDIN in paths else min(workers, len(jobs))
                        pool = stack.enter_context(process_pool(size, _init_worker,
                                                                (tokenizer,)))
                    done = results(pool, pool.imap(_encode_job,
                                                   [small_job(job, spill) for job in jobs]))
                # Closed however the loop ends: the threads' jobs not started are cancelled
                # and the threads end here, not when the error's traceback is dropped (nor
                # live on into the fork of a later run's pool).
                with contextlib.closing(done):
                    for job, (part, n_ids, n_docs, n_bytes) in zip(jobs, done):
                        if job[1] == "text" and job[2] == 0:  # a plain file's first range
                            out.document()
                        elif n_docs:  # documents, or small files, with separators between
                            out.document()
                            out.documents += n_docs - 1  # separators between them: written
                        if isinstance(part, str):  # a pool worker's file
                            out.copy_from(part, n_ids)
                        else:
                            out.write(part)
                        bar.update(n_bytes)
        out.finish()
    return out.total


def _jobs(paths: list[str], edges: Edges, target: int, text_field: str, allowed_special,
          between: list[int], spill: str) -> list[tuple]:
    """The pool's jobs for files in order: (path, "text", start, end, ...) for each byte range
    of a plain file of target bytes or more, (path, "documents", start, end, ...) for each
    part of a file read as documents, and (((path, size), ...), "files", 0, 0, ...) for a run
    of plain files smaller than target (empty ones too: each is a document) together, about
    target bytes of them: a job a file cost each its own spill file and trip
    through the pool (8 000 files of 1 KB: 2.3-2.9 s on two processes against 0.3-0.4 s
    now)."""
    jobs: list[tuple] = []
    small: list[tuple[str, int]] = []  # (path, size) of plain files in a row, each < target
    small_bytes = 0

    def flush_small() -> None:
        nonlocal small_bytes
        if small:
            jobs.append((tuple(small), "files", 0, 0))
            small.clear()
            small_bytes = 0

    for path in paths:
        text = kind_of(path) == "text"
        size = file_size(path) if text else target
        if size < target:  # its size as planned: the worker checks that it still holds
            small.append((path, size))
            small_bytes += size
            if small_bytes >= target:
                flush_small()
            continue
        flush_small()
        if text:
            jobs += [(path, "text", a, b) for a, b in plan_file(path, edges, target)]
        else:
            jobs += [(path, "documents", a, b) for _, a, b in parts(path, target)]
    flush_small()
    return [job + (text_field, allowed_special, between, os.path.join(spill, str(k)))
            for k, job in enumerate(jobs)]


def _encode_here(tokenizer, path: str, edges: Edges, target: int, text_field: str,
                 allowed_special, out: "_IdsFile", bar, ranges=None) -> None:
    """Encodes one input in this process (one worker, or standard input); ranges: its byte
    ranges, if planned already (a file without edges took ~0.4 us a byte to plan)."""
    if kind_of(path) != "text":
        _encode_documents(tokenizer, path, None, text_field, allowed_special, out, bar)
        return
    out.document()
    for a, b in ranges or plan_file(path, edges, target):
        out.write(_encode_range(tokenizer, path, a, b, allowed_special))
        bar.update(b - a)


def _encode_range(tokenizer, path: str, start: int, end: int, allowed_special,
                  scratch: "_Scratch | None" = None) -> np.ndarray:
    """The ids of bytes [start, end) of a text file, encoded from its UTF-8 as read (a str
    made of it would be made UTF-8 again: ~20% of the time) on the tokenizer's threads;
    with a scratch, on the calling thread (a C scanner's pattern only), read and encoded in
    the scratch's buffers."""
    encoder = tokenizer._encoder_for(allowed_special)
    data = read_range_bytes(path, start, end) if scratch is None else \
        scratch.read(path, start, end)
    try:
        return encoder.encode(data, tokenizer.dtype) if scratch is None else \
            encoder.encode_here(data, tokenizer.dtype, scratch.ids)
    except MissingBytes as e:
        raise ValueError(f"{path}: byte offset {start + e.offset}: {e}") from None
    except (ValueError, UnicodeDecodeError):
        decode_range(bytes(data), path, start)  # the error that says where it is not UTF-8
        raise


def _on_threads(tokenizer, jobs: list[tuple], threads: int, allowed_special
                ) -> Iterator[tuple]:
    """The results of jobs of plain text files' ranges (see _jobs), encoded on threads of this
    process, in order, as _encode_job gives them but with the ids themselves in place of a
    file. A job is submitted as an earlier one's result is taken, two a thread ahead: the ids
    waiting to be written are bounded, however slow the output. Leaving early (an error, or
    Ctrl-C) cancels the jobs not started and waits for the running ones (a range each)."""
    scratches: collections.deque = collections.deque()  # those no job is using
    with ThreadPoolExecutor(threads) as pool:
        waiting: collections.deque = collections.deque()
        rest = iter(jobs)
        try:
            for job in itertools.islice(rest, 2 * threads):
                waiting.append(submit_or_run(pool, _encode_plain, tokenizer, job,
                                             allowed_special, scratches))
            while waiting:
                result = waiting.popleft().result()
                job = next(rest, None)
                if job is not None:
                    waiting.append(submit_or_run(pool, _encode_plain, tokenizer, job,
                                                 allowed_special, scratches))
                yield result
        finally:
            for future in waiting:
                future.cancel()


class _Scratch:
    """A job's buffers for a range's bytes and its int32 ids (room for one a byte), which
    later jobs take over: their memory is found and cleared by the kernel once, not once a
    range (a range of 4 MB fills 4 MB of the first and ~4 MB of the second)."""

    def __init__(self):
        self.text = np.empty(0, np.uint8)
        self.ids = np.empty(0, np.int32)

    def read(self, path: str, start: int, end: int) -> np.ndarray:
        """Bytes [start, end) of path, read into the text buffer; both buffers are made
        anew, with room to spare (ranges end at the first safe edge past their target), if
        they are too short for them."""
        n = end - start
        if len(self.text) < n:
            self.text = np.empty(n + n // 16, np.uint8)
            self.ids = np.empty(n + n // 16, np.int32)
        return read_range_into(path, start, end, self.text)

    def kept(self) -> bool:
        """Whether the buffers are worth keeping for the next job: not those grown for a
        range far over the target (a stretch without a safe edge)."""
        return len(self.text) <= 2 * _THREAD_RANGE_BYTES


def _encode_plain(tokenizer, job: tuple, allowed_special, scratches: collections.deque
                  ) -> tuple[np.ndarray, int, int, int]:
    """On a thread: a plain file's byte range encoded, in a scratch taken from scratches
    (or a new one) and put back there; returns (its ids, how many, 0 documents, the bytes
    of text done), as _encode_job gives them."""
    path, _, start, end = job[:4]
    try:
        scratch = scratches.pop()  # (pop and append are atomic)
    except IndexError:
        scratch = _Scratch()
    try:
        ids = _encode_range(tokenizer, path, start, end, allowed_special, scratch)
    finally:
        if scratch.kept():
            scratches.append(scratch)
    return ids, len(ids), 0, end - start


class _IdsFile:
    """The output .npy as it is written: a header rewritten with the length at the end, and
    the separator's ids before every document but the first."""

    def __init__(self, dtype: np.dtype, separator_ids: list[int]):
        self.dtype = dtype
        self.between = np.array(separator_ids, dtype)
        self.total = self.documents = 0
        self.f = None
        self.write_back = False  # only the output is: a pool worker's part is temporary
        self.written_back = self.pending = 0  # f's bytes sent to the disk, and written since

    def start(self, f) -> None:
        """Writes to f from now on, beginning with a header (a worker's part has none), and
        has the kernel write the ids to the disk as they come (_wrote)."""
        self.f = f
        f.write(_npy_header(self.dtype, 0))
        self.write_back = hasattr(os, "posix_fadvise")  # (not on macOS nor Windows)
        self.written_back = f.tell()

    def _wrote(self, n_bytes: int) -> None:
        """Every _WRITE_BACK_BYTES written, asks the kernel to start writing them to the disk,
        without waiting for it to be done: on Linux, posix_fadvise's DONTNEED starts the
        write-back of the range's dirty pages (which stay cached: it drops clean pages only);
        elsewhere it may do nothing. The fsync that ends atomic_write then has little left to
        write (150 MB of ids: 0-1 against 75-80 ms)."""
        if not self.write_back:
            return
        self.pending += n_bytes
        if self.pending >= _WRITE_BACK_BYTES:
            self.f.flush()
            with contextlib.suppress(OSError):  # only a hint
                os.posix_fadvise(self.f.fileno(), self.written_back, self.pending,
                                 os.POSIX_FADV_DONTNEED)
            self.written_back += self.pending
            self.pending = 0

    def document(self) -> None:
        """A new document begins."""
        if self.documents:
            self.write(self.between)
        self.documents += 1

    def write(self, ids: np.ndarray) -> None:
        self.f.write(ids)  # its buffer, not a bytes copy of it
        self.total += len(ids)
        self._wrote(ids.nbytes)

    def copy_from(self, part: str, n_ids: int) -> None:
        """Appends the ids a worker wrote to the file part, then deletes it."""
        with open(part, "rb") as ids:
            shutil.copyfileobj(ids, self.f, 1 << 20)
        os.unlink(part)
        self.total += n_ids
        self._wrote(n_ids * self.dtype.itemsize)

    def finish(self) -> None:
        self.f.seek(0)
        self.f.write(_npy_header(self.dtype, self.total))


def _encode_documents(tokenizer, path: str, part, text_field: str, allowed_special,
                      out: _IdsFile, bar) -> None:
    """The documents of a file that is not plain text (or of one part of it), encoded in
    batches on the tokenizer's threads (encode_batch_to_numpy), each a document of out; a
    text stream (compressed text, stdin) is one document."""
    specials = tokenizer._encoder_for(allowed_special).specials
    edges = Edges(specials.encoded, tokenizer.pretokenizer.edges, str)
    stream = kind_of(path) == "stream"
    if stream:
        out.document()
    for batch in batches(documents(path, text_field, edges, part), _DOCUMENT_BATCH_CHARS):
        try:
            ids, offsets = tokenizer.encode_batch_to_numpy(batch,
                                                           allowed_special=allowed_special)
        except MissingBytes as e:
            raise ValueError(f"{path}: {e}") from None
        for a, b in zip(offsets.tolist(), offsets[1:].tolist()):
            if not stream:
                out.document()
            out.write(ids[a:b])
        bar.update(sum(map(len, batch)))


def _separator_ids(tokenizer, separator) -> list[int]:
    """The ids written between two documents: the separator encoded with every special token
    allowed (a document boundary, not text of the documents)."""
    if separator == "default":
        separator = DEFAULT_SEPARATOR if DEFAULT_SEPARATOR in tokenizer.special_ids else None
    if separator is None:
        return []
    if not isinstance(separator, str) or not separator:
        raise TypeError(f"separator must be a non-empty str or None, not {separator!r}")
    return tokenizer.encode(separator)


_worker_tokenizer = None  # in pool workers: the tokenizer, sent once at start


def _init_worker(tokenizer) -> None:
    global _worker_tokenizer
    _worker_tokenizer = tokenizer
    tokenizer.num_threads = 1  # the pool already keeps every core busy


@pool_job
def _encode_job(job) -> tuple[str, int, int, int]:
    """What each worker runs (see _jobs): the ids of a plain file's byte range, or of a part's
    documents or a run of small files with the separator between them, written to a file in
    the output's dtype; returns (that file, its ids, the documents in it, the bytes of text
    done)."""
    path, kind, start, end, text_field, allowed_special, between, spill_path = job
    tok = _worker_tokenizer
    if kind == "text":
        ids = _encode_range(tok, path, start, end, allowed_special)
        ids.tofile(spill_path)
        return spill_path, len(ids), 0, end - start
    part_out = _IdsFile(np.dtype(tok.dtype), between)  # separators between its documents
    bar = progress_bar(False)  # counts the characters (or bytes, of files) done
    with open(spill_path, "wb") as f:
        part_out.f = f
        if kind == "files":  # each a document, of the size planned
            for one, size in path:
                part_out.document()
                part_out.write(_encode_range(tok, one, 0, size, allowed_special))
                bar.update(size)
        else:
            _encode_documents(tok, path, (path, start, end), text_field, allowed_special,
                              part_out, bar)
    return spill_path, part_out.total, part_out.documents, bar.n


def _npy_header(dtype: np.dtype, n: int) -> bytes:
    """A .npy v1.0 header of fixed size (128 bytes) for a 1-D array of n items, so the real
    length can be written over the placeholder once known."""
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (dtype.str, n)
    body = d + " " * (128 - 10 - len(d) - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(body)) + body.encode("latin1")
