"""Corpus files read as a stream of documents, picked by extension: JSON lines (.jsonl),
Parquet (.parquet), text or JSON lines compressed with gzip (.gz) or zstandard (.zst), and
standard input ("-", text). Plain text files are not read here: they are cut into byte
ranges that processes read on their own (sources.py, chunking.py).

A record of JSON lines or Parquet is one document, its text in `text_field`: no pre-token
and no pair joins two records. Compressed text and standard input are one text stream, cut
at safe edges (chunking.cut_stream) into pieces that count and encode like the whole. The
pieces are read in the calling process, in bounded memory (a line, a Parquet batch, a
stream block); pyarrow and zstandard are optional extras, named when missing.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from typing import Iterator

from .chunking import Edges, cut_stream
from .sources import STDIN, check_input_file

_BLOCK = 1 << 20  # characters read at a time from a text stream
_PARQUET_BATCH = 1024  # records read at a time from a Parquet file


def kind_of(path: str) -> str:
    """"text" (a plain file, read in byte ranges), "jsonl", "parquet" or "stream" (text read
    as a stream: compressed, or standard input)."""
    name = path.lower()
    if path == STDIN:
        return "stream"
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            return "jsonl" if name[:-len(suffix)].endswith(".jsonl") else "stream"
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return "text"


def documents(path: str, text_field: str, edges: Edges) -> Iterator[str]:
    """The documents of a file that is not plain text (see kind_of), in order; edges (for
    str) cut a text stream."""
    kind = kind_of(check_input_file(path))
    if kind == "parquet":
        yield from _parquet_documents(path, text_field)
        return
    with _open_text(path) as f:
        try:
            if kind == "jsonl":
                yield from _jsonl_documents(f, path, text_field)
            else:
                yield from cut_stream(iter(lambda: f.read(_BLOCK), ""), edges, path)
        except UnicodeDecodeError as e:
            raise ValueError(f"{path} is not valid UTF-8 ({e.reason})") from None
        except (EOFError, OSError, gzip.BadGzipFile) as e:
            if isinstance(e, FileNotFoundError):
                raise
            raise ValueError(f"{path}: cannot be read as {kind_of(path)} ({e})") from None


def _open_text(path: str):
    """A text (UTF-8) reader of the file, decompressed by its extension; stdin for "-"."""
    if path == STDIN:
        return _stdin_text()
    name = path.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise ImportError(f"reading {path} needs zstandard: "
                              "pip install 'bpe_cffi[zstd]'") from None
        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        return io.TextIOWrapper(raw, encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


@contextlib.contextmanager
def _stdin_text() -> Iterator[io.TextIOWrapper]:
    """Standard input read as UTF-8, left open afterwards (the wrapper is detached)."""
    wrapper = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="")
    try:
        yield wrapper
    finally:
        wrapper.detach()


def _jsonl_documents(f, path: str, text_field: str) -> Iterator[str]:
    for lineno, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
        text = record.get(text_field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            raise ValueError(f"{path}:{lineno}: the record has no text field {text_field!r} "
                             "(choose the field with text_field= or --text-field)")
        yield text


def _parquet_documents(path: str, text_field: str) -> Iterator[str]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"reading {path} needs pyarrow: pip install 'bpe_cffi[parquet]'") \
            from None
    try:
        parquet = pq.ParquetFile(path)
    except Exception as e:  # pyarrow's errors have no common public base
        raise ValueError(f"{path}: not a Parquet file ({e})") from None
    if text_field not in parquet.schema_arrow.names:
        raise ValueError(f"{path}: no column {text_field!r} (columns: "
                         f"{', '.join(parquet.schema_arrow.names)}; choose one with "
                         "text_field= or --text-field)")
    for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH, columns=[text_field]):
        for text in batch.column(0).to_pylist():
            if not isinstance(text, str):
                raise ValueError(f"{path}: column {text_field!r} holds {text!r}, not text")
            yield text
