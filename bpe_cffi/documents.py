"""Corpus files read as a stream of documents, picked by extension: JSON lines (.jsonl or
.ndjson), Parquet (.parquet), text or JSON lines compressed with gzip (.gz) or zstandard
(.zst), and standard input ("-", text). Plain text files are not read here: they are cut into
byte ranges that processes read on their own (sources.py, chunking.py).

A record of JSON lines or Parquet is one document, its text in `text_field`: no pre-token
and no pair joins two records. Compressed text and standard input are one text stream, cut
at safe edges (chunking.cut_stream) into pieces that count and encode like the whole. The
files are read in parts that processes read on their own where the format allows a cut
(uncompressed JSON lines in byte ranges cut after a line break, Parquet by row groups), else
whole; each in bounded memory (a range, a Parquet batch, a stream block). pyarrow and
zstandard are optional extras, named when missing.
"""
from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import json
import re
import sys
import zlib
from typing import Iterator

from .chunking import Edges, cut_stream
from .sources import (STDIN, check_input_file, file_size, first_bad_utf8, is_url, open_binary,
                      read_range_bytes)

try:  # the "gzip" extra: the same files decompressed 3-5x faster (docs/performance.md)
    from isal import igzip as _gzip
    from isal.igzip_lib import IsalError as _GzipDataError
except ImportError:
    _gzip, _GzipDataError = gzip, zlib.error

_BLOCK = 1 << 20  # characters read at a time from a text stream
_PARQUET_BATCH = 1024  # records read at a time from a Parquet file
_JSON = json.JSONDecoder()  # .decode: the one JSON value a str holds, else JSONDecodeError
# JSON's whitespace, all a blank line of JSON lines may hold: str.strip() would also take
# U+3000, U+2028 or \x1c, and pass over a line that is not valid JSON without a word.
_JSON_SPACE = " \t\r\n"
_PARSE_LINES = 1 << 16  # JSON lines parsed at once (jsonl_block_documents)
# JSON may escape half of a UTF-16 surrogate pair alone ("\ud800"), which decodes to a str
# that is no Unicode text (it cannot be UTF-8).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _long_json_int(digits: str) -> int | float:
    """A JSON integer as an int, or past int()'s limit on digits (4 300 by default since
    Python 3.11) as a float: valid JSON all the same, and only other fields than the text
    field can hold it (a text field must be a str)."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


_JSON_LONG_INTS = json.JSONDecoder(parse_int=_long_json_int)


def _decode_json(line: str):
    """The JSON value of a line, whatever its integers' length (their conversion is a
    ValueError that is no JSONDecodeError, and names neither file nor line)."""
    try:
        return _JSON.decode(line)
    except json.JSONDecodeError:
        raise
    except ValueError:
        return _JSON_LONG_INTS.decode(line)


JSON_LINES = (".jsonl", ".ndjson")  # the two names JSON lines go by
COMPRESSED = (".gz", ".zst")


def kind_of(path: str) -> str:
    """"text" (a plain file, read in byte ranges), "jsonl" (.jsonl or .ndjson), "parquet" or
    "stream" (text read as a stream: compressed, or standard input)."""
    name = path.lower()
    if path == STDIN:
        return "stream"
    for suffix in COMPRESSED:
        if name.endswith(suffix):
            return "jsonl" if name[:-len(suffix)].endswith(JSON_LINES) else "stream"
    if name.endswith(JSON_LINES):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    return "text"


# A part of a file that a process reads on its own: (path, start, end). Byte offsets for
# uncompressed JSON lines (cut after a line break), row groups [start, end) for Parquet, and
# (0, WHOLE) for a compressed file or standard input, which can only be read from the start.
Part = tuple[str, int, int]
WHOLE = -1


def parts(path: str, target: int) -> list[Part]:
    """The parts of a file that is not plain text: about `target` bytes each where the format
    allows a cut (uncompressed JSON lines, Parquet row groups), else the whole file."""
    kind = kind_of(check_input_file(path))  # standard input is a "stream"
    if kind not in ("jsonl", "parquet") or path.lower().endswith(COMPRESSED):  # no cuts
        return [(path, 0, WHOLE)]
    if kind == "parquet":
        groups = _parquet_file(path).metadata.num_row_groups
        return [(path, g, g + 1) for g in range(groups)]
    return [(path, a, b) for a, b in _line_ranges(path, target)]


def _line_ranges(path: str, target: int) -> list[tuple[int, int]]:
    """Byte ranges of about target bytes, each ending just after a line break (or at the end)."""
    size = file_size(path)
    cuts = [0]
    with open_binary(path) as f:
        while cuts[-1] + target < size:
            f.seek(cuts[-1] + target)
            f.readline()  # to the end of the line the target falls in
            if f.tell() >= size:
                break
            cuts.append(f.tell())
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def documents(path: str, text_field: str, edges: Edges, part: Part | None = None
              ) -> Iterator[str]:
    """The documents of a file that is not plain text (see kind_of), or of one of its parts,
    in order; edges (for str) cut a text stream."""
    kind = kind_of(check_input_file(path))
    start, end = (0, WHOLE) if part is None else part[1:]
    if kind == "parquet":
        yield from _parquet_documents(path, text_field, start, end)
        return
    if kind == "jsonl" and end != WHOLE:  # a byte range of whole lines
        where = path if start == 0 else f"{path} (from byte {start})"
        block = read_range_bytes(path, start, end)
        yield from jsonl_block_documents(_past_bom(block) if start == 0 else block, where,
                                         text_field)
        return
    with _open_text(path) as f, _reading(path, kind):
        if kind == "jsonl":
            yield from _jsonl_documents(f, path, text_field, file_start=True)
        else:
            yield from cut_stream(iter(lambda: f.read(_BLOCK), ""), edges, path)


# JSON lines read as blocks of lines, parsed elsewhere: (where they come from, text field)
JsonLines = tuple[str, str]


def jsonl_blocks(path: str, size: int) -> Iterator[bytes]:
    """A JSON lines file, decompressed but neither decoded nor parsed, in blocks of whole
    lines of about size bytes: for its reader to hand the decoding and parsing to other
    processes."""
    with _open_binary(path) as f, _reading(path, "jsonl"):
        first = True
        while block := f.read(size):
            if first:
                block, first = _past_bom(block), False
            yield block + f.readline()  # to the end of the line


def _past_bom(data: bytes) -> bytes:
    """The start of a JSON lines file past its UTF-8 byte order mark, if it has one: JSON
    allows a parser to ignore it (RFC 8259), as pyarrow's (Hugging Face datasets') does.
    Only at the start of a file: elsewhere it is no JSON."""
    return data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data


class BlockOfLinesError(ValueError):
    """A bad record in a block of JSON lines parsed apart from its file: its line counts from
    the block's first line. The file's reader finds the line in the file (locate_jsonl_error)."""


def locate_jsonl_error(path: str, text_field: str) -> None:
    """Reads the JSON lines file path from its start and raises the ValueError of its first bad
    record, with its line in the file; returns if there is none (the file changed)."""
    with _open_text(path) as f, _reading(path, "jsonl"):
        for _ in _jsonl_documents(f, path, text_field, file_start=True):
            pass


@contextlib.contextmanager
def jsonl_lines_named(paths: list[str], text_field: str) -> Iterator[None]:
    """A BlockOfLinesError raised within, from one of paths, as the error of that file's bad
    line, numbered in the file: other processes parse blocks of its lines without knowing
    where they begin, so on an error the file is read again from its start. So for a
    UnicodeError: a record's text with a lone surrogate fails only once it is made UTF-8."""
    try:
        yield
    except (BlockOfLinesError, UnicodeError):
        for path in paths:
            if path != STDIN and kind_of(path) == "jsonl":
                locate_jsonl_error(path, text_field)
        raise


def jsonl_block_documents(block: str | bytes, where: str, text_field: str) -> list[str]:
    """The documents of a block of whole JSON lines from where (str, or UTF-8 bytes); an
    error's line number counts from the block's first line. The lines are parsed by a map
    over them (as fast as one array of them all: realmix's 36 MB in 0.19-0.21 s, against
    0.48 s in a loop that checks each record as it goes), and again one by one only to
    report an error precisely."""
    if isinstance(block, bytes):
        try:
            block = block.decode("utf-8")
        except UnicodeDecodeError as e:
            line = block.count(b"\n", 0, e.start) + 1
            raise BlockOfLinesError(f"{where} (a block of lines):{line}: not valid UTF-8 "
                                    f"({e.reason})") from None
    lines = [line for line in block.split("\n") if line.strip(_JSON_SPACE)]
    texts: list = []
    # A slice of lines at a time: the records of a 16 MB block of tiny ones (a dict each) took
    # ~28 bytes a byte, where their texts take a pointer each.
    for k in range(0, len(lines), _PARSE_LINES):
        try:
            records = list(map(_JSON.decode, lines[k:k + _PARSE_LINES]))
        except (ValueError, RecursionError):  # then line by line, to name the line (or, for
            break                             # an integer too long for int(), read it as float)
        part = [r.get(text_field) if isinstance(r, dict) else None for r in records]
        if not all(isinstance(t, str) for t in part):
            break
        texts += part
    else:
        return texts
    try:
        return list(_jsonl_documents(io.StringIO(block, newline="\n"),
                                     f"{where} (a block of lines)", text_field))
    except ValueError as e:
        raise BlockOfLinesError(str(e)) from None


@contextlib.contextmanager
def _reading(path: str, kind: str) -> Iterator[None]:
    """Decoding and decompression errors as ValueErrors that name the file (and, for a file,
    where in its text: read again to find it)."""
    try:
        yield
    except UnicodeDecodeError as e:
        place = getattr(e, "place", "")  # standard input's (_StdinText), read once
        if path != STDIN:
            try:
                with _open_binary(path) as f:
                    place = first_bad_utf8(f)
            except (EOFError, OSError, zlib.error, _GzipDataError):  # (it was read once)
                pass
        raise ValueError(f"{path} is not valid UTF-8{place} ({e.reason})") from None
    except (EOFError, OSError, zlib.error, _GzipDataError) as e:  # BadGzipFile: an OSError
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: cannot be read as {kind} ({e})") from None


def _open_binary(path: str):
    """The file's bytes (a URL's through fsspec), decompressed by its extension."""
    name = path.lower()
    if name.endswith(".gz"):
        if is_url(path):  # fsspec's gzip reader closes the file under it
            import fsspec
            return fsspec.open(path, "rb", compression="gzip").open()
        return _gzip.open(path, "rb")
    if name.endswith(".zst"):
        try:
            import zstandard
        except ImportError:
            raise ImportError(f"reading {path} needs zstandard: "
                              "pip install 'bpe_cffi[zstd]'") from None
        return io.BufferedReader(_ZstdFrames(path, zstandard))
    return open_binary(path)


class _ZstdFrames(io.RawIOBase):
    """The decompressed bytes of a .zst file, every frame in turn, and an EOFError if the file
    ends inside a frame, as gzip gives: zstandard's stream reader ends there in silence, and a
    file cut short (a download stopped half-way) lost its end unnoticed. The data come from
    that stream reader, whose output per read is bounded (a decompressor fed whole chunks of
    the file made all of a chunk's output at once: 1 GB from 33 KB of spaces); whether the
    file ends whole is found first by walking its frame and block headers (_zstd_cut_at),
    which reads a few bytes a block. Errors come as OSErrors."""

    def __init__(self, path: str, zstandard):
        super().__init__()
        self._path, self._zstd = path, zstandard
        self._stream = None  # opened on the first read, after the walk

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._stream is None:
            with open_binary(self._path) as f:
                cut = _zstd_cut_at(f)
            if cut is not None:
                raise EOFError(f"the file ends inside a zstd frame (byte {cut}): is it cut "
                               "short?")
            self._stream = self._zstd.ZstdDecompressor().stream_reader(
                open_binary(self._path), read_across_frames=True, closefd=True)
        try:
            return self._stream.readinto(buffer)
        except self._zstd.ZstdError as e:
            raise OSError(str(e)) from None

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
        super().close()


_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC = 0x184D2A50  # to 0x184D2A5F


def _zstd_cut_at(f) -> int | None:
    """Where a zstd file (RFC 8878) ends inside a frame, or None if it ends whole: the frames'
    headers and block headers are read, their contents skipped. Bytes that are no frame are
    left to the decompressor, which names them."""
    size = f.seek(0, io.SEEK_END)
    at = 0
    while at < size:
        f.seek(at)
        head = f.read(4)
        if len(head) < 4:
            return at
        magic = int.from_bytes(head, "little")
        if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
            length = f.read(4)
            if len(length) < 4:
                return at
            at += 8 + int.from_bytes(length, "little")
        elif magic != _ZSTD_MAGIC:
            return None
        else:
            descriptor = f.read(1)
            if not descriptor:
                return at
            d = descriptor[0]
            single_segment = (d >> 5) & 1
            content_size = (1 if single_segment else 0, 2, 4, 8)[d >> 6]
            at += 5 + (not single_segment) + (0, 1, 2, 4)[d & 3] + content_size
            while True:  # blocks, up to the last
                f.seek(at)
                block = f.read(3)
                if len(block) < 3:
                    return min(at, size)
                header = int.from_bytes(block, "little")
                kind, length = (header >> 1) & 3, header >> 3
                at += 3 + (1 if kind == 1 else length)  # an RLE block holds one byte
                if header & 1:
                    break
            at += 4 * ((d >> 2) & 1)  # the checksum
        if at > size:
            return size
    return None


def _open_text(path: str):
    """A text (UTF-8) reader of the file, decompressed by its extension; stdin for "-"."""
    if path == STDIN:
        return _stdin_text()
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8", newline="\n")


@contextlib.contextmanager
def _stdin_text() -> Iterator[_StdinText]:
    """Standard input read as UTF-8, left open afterwards."""
    if sys.stdin is None:  # started with standard input closed
        raise ValueError("standard input is closed")
    yield _StdinText(sys.stdin.buffer)


class _StdinText:
    """A binary stream's text, decoded as UTF-8 a block at a time, no newline translated.
    Standard input cannot be read again to find a bad byte, as a file is (first_bad_utf8), so
    this counts the bytes and line breaks it has decoded: the UnicodeDecodeError of a bad
    byte carries `place`, where it lies in the same words."""

    def __init__(self, raw):
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._fed = self._lines = 0  # bytes given to the decoder; line breaks decoded

    def read(self, size: int) -> str:
        """Up to size characters (at least one, but "" at the end of the stream)."""
        while True:
            block = self._raw.read(size)
            held = len(self._decoder.getstate()[0])  # a character's first bytes, kept back
            try:
                text = self._decoder.decode(block, final=not block)
            except UnicodeDecodeError as e:  # e.object: the bytes held, then the block
                done = self._fed - held + e.start
                line = self._lines + e.object.count(b"\n", 0, e.start) + 1
                e.place = f": byte offset {done} of its text, " + (
                    f"line {line}" if block else "at its end")
                raise
            self._fed += len(block)
            self._lines += block.count(b"\n")  # (bytes held back hold none)
            if text or not block:
                return text


def _jsonl_documents(f, path: str, text_field: str, file_start: bool = False
                     ) -> Iterator[str]:
    """The records' texts, a line each: lines end at \n alone (a lone \r is whitespace inside
    a record, as JSON has it), so f is read with newline="\n". file_start: f begins the file,
    whose byte order mark is passed over (_past_bom)."""
    for lineno, line in enumerate(f, 1):
        if lineno == 1 and file_start and line.startswith("\ufeff"):
            line = line[1:]
        if not line.strip(_JSON_SPACE):
            continue
        try:
            record = _decode_json(line)
        except json.JSONDecodeError as e:
            if line.startswith("\ufeff"):  # json's advice (utf-8-sig) does not apply here
                raise ValueError(f"{path}:{lineno}: a byte order mark, which only the start "
                                 "of a file may hold") from None
            raise ValueError(f"{path}:{lineno}: not valid JSON ({e.msg})") from None
        except RecursionError:
            raise ValueError(f"{path}:{lineno}: JSON nested too deeply") from None
        if not isinstance(record, dict) or text_field not in record:
            raise ValueError(f"{path}:{lineno}: the record has no text field {text_field!r} "
                             "(choose the field with text_field= or --text-field)")
        text = record[text_field]
        if not isinstance(text, str):  # null too: a field that holds no text
            shown = "null" if text is None else repr(text)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise ValueError(f"{path}:{lineno}: the record's text field {text_field!r} holds "
                             f"{shown}, not a str")
        if ("\\ud" in line or "\\uD" in line) and _LONE_SURROGATE.search(text):
            raise ValueError(f"{path}:{lineno}: the record's text holds a lone surrogate "
                             "(a \\uD800-\\uDFFF escape not in a pair), which is no Unicode text")
        yield text


def _parquet_file(path: str):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"reading {path} needs pyarrow: pip install 'bpe_cffi[parquet]'") \
            from None
    source = open_binary(path) if is_url(path) else path  # a URL's file, through fsspec
    try:
        return pq.ParquetFile(source)
    except Exception as e:  # pyarrow's errors have no common public base
        raise ValueError(f"{path}: not a Parquet file ({e})") from None


def _parquet_documents(path: str, text_field: str, start: int = 0, end: int = WHOLE
                       ) -> Iterator[str]:
    """The text_field of each record of row groups [start, end) (WHOLE: all)."""
    parquet = _parquet_file(path)
    if text_field not in parquet.schema_arrow.names:
        raise ValueError(f"{path}: no column {text_field!r} (columns: "
                         f"{', '.join(parquet.schema_arrow.names)}; choose one with "
                         "text_field= or --text-field)")
    groups = range(parquet.metadata.num_row_groups)[start:None if end == WHOLE else end]
    # Records are numbered in the file from 0, for errors: those of the groups before.
    record = sum(parquet.metadata.row_group(g).num_rows for g in range(groups.start))
    for batch in parquet.iter_batches(batch_size=_PARQUET_BATCH, row_groups=list(groups),
                                      columns=[text_field]):
        column = batch.column(0)
        try:
            texts = column.to_pylist()
        except UnicodeDecodeError:  # a string column is UTF-8 by its type, not always in fact
            bad = next(i for i in range(len(column)) if not _decodes(column[i]))
            raise ValueError(f"{path}: record {record + bad}: column {text_field!r} holds "
                             "text that is not valid UTF-8") from None
        for text in texts:
            if not isinstance(text, str):
                raise ValueError(f"{path}: record {record}: column {text_field!r} holds "
                                 f"{text!r}, not text")
            record += 1
            yield text


def _decodes(value) -> bool:
    """Whether a pyarrow value converts to Python."""
    try:
        value.as_py()
    except UnicodeDecodeError:
        return False
    return True
