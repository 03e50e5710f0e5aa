"""Corpus formats: JSON lines, Parquet, gzip and zstandard compressed text and JSON lines,
standard input; files written by the real libraries. Each counts, trains and encodes like
plain text holding the same documents joined by <|endoftext|>."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import warnings
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.json  # noqa: F401  (pa.json)
import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_cffi
from bpe_cffi import Tokenizer, documents

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, real_text):
    """The same documents in every format; "plain" joins them with <|endoftext|>."""
    d = tmp_path_factory.mktemp("formats")
    docs = real_text.split(EOT)
    joined = EOT.join(docs)
    lines = "".join(json.dumps({"text": t, "n": k}) + "\n" for k, t in enumerate(docs))
    paths = {"plain": d / "plain.txt", "jsonl": d / "docs.jsonl",
             "jsonl.gz": d / "docs.jsonl.gz", "jsonl.zst": d / "docs.jsonl.zst",
             "txt.gz": d / "text.txt.gz", "txt.zst": d / "text.txt.zst",
             "parquet": d / "docs.parquet"}
    paths["plain"].write_text(joined, encoding="utf-8", newline="")
    paths["jsonl"].write_text(lines, encoding="utf-8")
    with gzip.open(paths["jsonl.gz"], "wt", encoding="utf-8") as f:
        f.write(lines)
    paths["jsonl.zst"].write_bytes(zstandard.ZstdCompressor().compress(lines.encode()))
    with gzip.open(paths["txt.gz"], "wt", encoding="utf-8", newline="") as f:
        f.write(joined)
    paths["txt.zst"].write_bytes(zstandard.ZstdCompressor().compress(joined.encode()))
    pq.write_table(pa.table({"id": list(range(len(docs))), "text": docs}), paths["parquet"],
                   row_group_size=7)
    return paths


FORMATS = ["jsonl", "jsonl.gz", "jsonl.zst", "txt.gz", "txt.zst", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("pattern", ["gpt2", "o200k", r"\w+|\W+"])
def test_counts_and_merges_equal_plain_text(corpus, fmt, pattern):
    want = bpe_cffi.count_words(corpus["plain"], [EOT], pattern=pattern)
    assert bpe_cffi.count_words(corpus[fmt], [EOT], pattern=pattern) == want
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert bpe_cffi.train_bpe(corpus[fmt], 700, [EOT], pattern=pattern) == \
            bpe_cffi.train_bpe(corpus["plain"], 700, [EOT], pattern=pattern)


@pytest.fixture(scope="module")
def tok(corpus):
    return Tokenizer(*bpe_cffi.train_bpe(corpus["plain"], 1000, [EOT]), [EOT])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("workers", [1, 2])
def test_encode_file_equals_plain_text(corpus, tok, tmp_path, fmt, workers):
    out = tmp_path / "ids.npy"
    want = tok.encode(corpus["plain"].read_bytes().decode("utf-8"))
    tok.encode_file(corpus[fmt], out, num_workers=workers)
    assert np.load(out).tolist() == want


def test_mixed_inputs_in_order(corpus, tok, tmp_path):
    out = tmp_path / "ids.npy"
    tok.encode_file([corpus["parquet"], corpus["plain"], corpus["txt.gz"]], out)
    text = corpus["plain"].read_bytes().decode("utf-8")
    assert np.load(out).tolist() == tok.encode(EOT.join([text] * 3))
    counts = bpe_cffi.count_words([corpus["plain"], corpus["jsonl"]], [EOT])
    assert counts == {w: 2 * c for w, c in bpe_cffi.count_words(corpus["plain"], [EOT]).items()}


def test_text_field_errors_name_the_file(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"docs.jsonl:1: the record "
                                         "has no text field 'body'"):
        bpe_cffi.count_words(corpus["jsonl"], text_field="body")
    with pytest.raises(ValueError, match=r"no column 'body' \(columns: id, text"):
        bpe_cffi.count_words(corpus["parquet"], text_field="body")
    assert bpe_cffi.count_words(corpus["jsonl"], [EOT], text_field="text")
    not_text = tmp_path / "not_text.jsonl"
    not_text.write_text('{"text": "ok"}\n{"text": 5}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"not_text.jsonl:2: the "
                                         "record's text field 'text' holds 5, not a str"):
        bpe_cffi.count_words(not_text)
    not_text.write_text('{"text": "ok"}\n{"text": null}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"not_text.jsonl:2: the "  # not "has no text field"
                                         "record's text field 'text' holds null, not a str"):
        bpe_cffi.count_words(not_text)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid JSON"):
        bpe_cffi.count_words(bad)
    broken = tmp_path / "broken.txt.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="broken.txt.gz: cannot be read"):
        bpe_cffi.count_words(broken)


@pytest.mark.parametrize("reader", ["installed", "standard library"])
def test_gzip_readers_agree_and_name_bad_files(corpus, tmp_path, monkeypatch, reader):
    # isal (the "gzip" extra) when installed, else the standard library's gzip: the same
    # documents, and a truncated or corrupt file is a ValueError naming it either way.
    if reader == "standard library":
        monkeypatch.setattr(documents, "_gzip", gzip)
        monkeypatch.setattr(documents, "_GzipDataError", zlib.error)
    want = bpe_cffi.count_words(corpus["jsonl"], [EOT], num_workers=1)
    assert bpe_cffi.count_words(corpus["jsonl.gz"], [EOT], num_workers=1) == want
    data = corpus["jsonl.gz"].read_bytes()
    for name, bad in [("cut", data[:len(data) // 2]),
                      ("corrupt", data[:20] + bytes(40) + data[60:])]:
        path = tmp_path / f"{name}.jsonl.gz"
        path.write_bytes(bad)
        with pytest.raises(ValueError, match=f"{name}.jsonl.gz"):
            bpe_cffi.count_words(path, num_workers=1)


@pytest.mark.parametrize("fmt", ["txt.zst", "jsonl.zst"])
def test_zstd_files_read_every_frame_and_name_bad_files(corpus, tmp_path, fmt):
    # zstandard's stream reader ends in silence where a cut file ends: that lost the rest of
    # the corpus. A file of several frames is read whole; a cut or corrupt one is a
    # ValueError naming it, as gzip's are.
    want = bpe_cffi.count_words(corpus[fmt], [EOT], num_workers=1)
    whole = zstandard.ZstdDecompressor().decompress(corpus[fmt].read_bytes())
    cut_at = whole.rindex(b"\n", 0, len(whole) // 2) + 1  # between two records
    frames = tmp_path / f"frames.{fmt}"
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    skippable = (0x184D2A5A).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    frames.write_bytes(skippable + compressor.compress(whole[:cut_at]) + skippable
                       + compressor.compress(whole[cut_at:]))
    assert bpe_cffi.count_words(frames, [EOT], num_workers=1) == want
    data = corpus[fmt].read_bytes()
    for name, bad in [("cut", data[:len(data) // 2]), ("corrupt", b"x" + data[1:]),
                      ("second-cut", data + data[:len(data) // 2])]:
        path = tmp_path / f"{name}.{fmt}"
        path.write_bytes(bad)
        with pytest.raises(ValueError, match=f"{name}.{fmt}"):
            bpe_cffi.count_words(path, [EOT], num_workers=1)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM")
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan's quarantine keeps what the reads free")
def test_zstd_reading_is_bounded(tmp_path):
    # 256 MB of spaces is 8 KB of zstd: reading it must not hold it all at once. (VmHWM, the
    # peak of this process's memory since its exec; ru_maxrss keeps the forking parent's.)
    path = tmp_path / "spaces.txt.zst"
    with open(path, "wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        for _ in range(256):
            w.write(b" " * (1 << 20))
    script = textwrap.dedent(f"""
        from bpe_cffi import documents
        with documents._open_binary({str(path)!r}) as f:
            n = sum(len(b) for b in iter(lambda: f.read(1 << 20), b""))
        status = open("/proc/self/status").read()
        peak = int(status.split("VmHWM:")[1].split()[0]) // 1024
        print(n, peak)""")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert int(out[0]) == 256 << 20
    assert int(out[1]) < 200, f"peak {out[1]} MB"


def test_cli_reads_standard_input(corpus, tmp_path):
    text = corpus["plain"].read_bytes()
    run = [sys.executable, "-m", "bpe_cffi"]
    subprocess.run(run + ["train", "-", "--vocab-size", "600", "--special-token", EOT,
                          "--out", str(tmp_path / "tok"), "--quiet"],
                   input=text, check=True, capture_output=True)
    tok = Tokenizer.load(tmp_path / "tok")
    assert tok.merges == bpe_cffi.train_bpe(corpus["plain"], 600, [EOT])[1]
    subprocess.run(run + ["encode", "--tokenizer", str(tmp_path / "tok"), "-", "--out",
                          str(tmp_path / "ids.npy"), "--quiet"],
                   input=text, check=True, capture_output=True)
    assert np.load(tmp_path / "ids.npy").tolist() == tok.encode(text.decode("utf-8"))


@pytest.mark.parametrize("suffix", [".ndjson", ".NDJSON", ".ndjson.gz", ".ndjson.zst"])
def test_ndjson_is_json_lines(corpus, tok, tmp_path, monkeypatch, suffix):
    # .ndjson is the other name JSON lines go by: read as records, in byte ranges when not
    # compressed (it was read as plain text, every line's JSON counted and encoded).
    from bpe_cffi import counting, encode_file
    monkeypatch.setattr(counting, "chunk_target", lambda size, workers: 20_000)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 20_000)
    source = corpus["jsonl" + suffix.lower()[len(".ndjson"):]]
    path = tmp_path / ("docs" + suffix)
    path.write_bytes(source.read_bytes())
    for workers in (1, 2):
        assert bpe_cffi.count_words(path, [EOT], num_workers=workers) == \
            bpe_cffi.count_words(corpus["plain"], [EOT], num_workers=1)
    out = tmp_path / "ids.npy"
    tok.encode_file(path, out, num_workers=2)
    assert np.load(out).tolist() == tok.encode(corpus["plain"].read_bytes().decode("utf-8"))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "jsonl.gz"])
def test_parts_hold_every_document_once_in_order(corpus, fmt):
    # Uncompressed JSON lines cut into byte ranges after line breaks, Parquet by row groups,
    # compressed files whole: each part read on its own gives the documents in order.
    from bpe_cffi import documents
    from bpe_cffi.chunking import Edges
    edges = Edges([EOT.encode()], None, str)
    path = str(corpus[fmt])
    found = documents.parts(path, 10_000)
    assert (len(found) > 3) == (fmt != "jsonl.gz")
    whole = list(documents.documents(path, "text", edges))
    assert [d for part in found for d in documents.documents(path, "text", edges, part)] == whole


def test_workers_read_parts_alike(corpus, tok, tmp_path, monkeypatch):
    from bpe_cffi import counting, encode_file
    monkeypatch.setattr(counting, "chunk_target", lambda size, workers: 20_000)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 20_000)
    paths = [corpus["jsonl"], corpus["parquet"], corpus["plain"], corpus["jsonl.zst"]]
    want = bpe_cffi.count_words(paths, [EOT], num_workers=1)
    assert bpe_cffi.count_words(paths, [EOT], num_workers=2) == want
    out = tmp_path / "ids.npy"
    text = corpus["plain"].read_bytes().decode("utf-8")
    tok.encode_file(paths, out, num_workers=2)
    assert np.load(out).tolist() == tok.encode(EOT.join([text] * 4))


def test_compressed_json_lines_parsed_by_the_workers(corpus, tmp_path, monkeypatch):
    # With several workers a compressed JSON lines file's reader only decompresses; blocks of
    # lines are parsed and counted by the workers.
    from bpe_cffi import counting
    monkeypatch.setattr(counting, "JSONL_BLOCK_CHARS", 5_000)
    want = bpe_cffi.count_words(corpus["plain"], [EOT])
    for fmt in ("jsonl.gz", "jsonl.zst"):
        assert bpe_cffi.count_words(corpus[fmt], [EOT], num_workers=2) == want
    bad = tmp_path / "bad.jsonl.gz"
    with gzip.open(bad, "wt", encoding="utf-8") as f:
        f.write('{"text": "fine"}\n' * 1000 + '{"body": "no text"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl.gz:1001: the record has no text field "
                                         "'text'"):  # its line in the file, not in a block
        bpe_cffi.count_words(bad, num_workers=2)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz"])
def test_json_lines_end_at_line_feeds_for_every_worker_count(tmp_path, fmt):
    # A lone \r is whitespace inside a record, as JSON has it (it ended a line when read one
    # by one, never when parsed in blocks); two lines that are no JSON alone are refused
    # even when joined they would be (parsed in blocks of lines joined, they were taken).
    def write(name: str, data: bytes) -> str:
        path = tmp_path / f"{name}.{fmt}"
        path.write_bytes(gzip.compress(data) if fmt.endswith(".gz") else data)
        return str(path)
    good = write("good", b'{"text": "hello world",\r"id": 1}\n{"text": "bye"}\r\n')
    bad = write("bad", b'{"text": "a"},{"text": "b", "c": 1\n"d": 2}\n')
    for workers in (1, 2):
        assert bpe_cffi.count_words(good, num_workers=workers) == \
            {b"hello": 1, b" world": 1, b"bye": 1}
        with pytest.raises(ValueError, match=r"bad\.jsonl.*:1: not valid JSON"):
            bpe_cffi.count_words(bad, num_workers=workers)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz"])
@pytest.mark.parametrize("blank", ["\u3000", "\x1c", "\u2028", "\x0c"])
def test_a_line_of_other_whitespace_is_no_blank_json_line(tmp_path, fmt, blank):
    # Only JSON's whitespace (space, tab, CR, LF) makes a blank line, which is passed over;
    # a line of other whitespace is not valid JSON: an error that names its line.
    data = ('{"text": "a b"}\n \t\r\n' + blank + '\n{"text": "c"}\n').encode("utf-8")
    path = tmp_path / f"docs.{fmt}"
    path.write_bytes(gzip.compress(data) if fmt.endswith(".gz") else data)
    for workers in (1, 2):
        with pytest.raises(ValueError, match=r"docs\.jsonl.*:3: not valid JSON"):
            bpe_cffi.count_words(str(path), num_workers=workers)


@pytest.mark.parametrize("fmt", ["jsonl", "jsonl.gz", "jsonl.zst"])
def test_json_lines_after_a_byte_order_mark(corpus, tok, tmp_path, monkeypatch, fmt):
    # A JSON lines file that starts with a UTF-8 byte order mark (as Windows tools write
    # them) reads as the same file without it, as pyarrow reads it; one that is not at the
    # start of the file is no JSON.
    from bpe_cffi import counting, encode_file
    monkeypatch.setattr(counting, "JSONL_BLOCK_CHARS", 5_000)  # blocks, parts for workers
    monkeypatch.setattr(counting, "chunk_target", lambda size, workers: 20_000)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 20_000)
    pack = {"gz": gzip.compress, "zst": zstandard.ZstdCompressor().compress}.get(
        fmt.split(".")[-1], bytes)
    plain = corpus["jsonl"].read_bytes()
    path = tmp_path / f"bom.{fmt}"
    path.write_bytes(pack(b"\xef\xbb\xbf" + plain))
    assert pa.json.read_json(pa.py_buffer(b"\xef\xbb\xbf" + plain)).num_rows == \
        plain.count(b"\n")  # (pyarrow's reader, for comparison)
    want = bpe_cffi.count_words(corpus["plain"], [EOT])
    out = tmp_path / "ids.npy"
    for workers in (1, 2):
        assert bpe_cffi.count_words(path, [EOT], num_workers=workers) == want
        tok.encode_file(path, out, num_workers=workers)
        assert np.load(out).tolist() == tok.encode(corpus["plain"].read_bytes().decode())
    inside = tmp_path / f"inside.{fmt}"
    inside.write_bytes(pack(b'{"text": "fine"}\n' * 3000 + b'\xef\xbb\xbf{"text": "x"}\n'))
    for workers in (1, 2):
        with pytest.raises(ValueError, match=r"inside\.jsonl.*:3001: a byte order mark, which "
                                             "only the start of a file may hold"):
            bpe_cffi.count_words(inside, num_workers=workers)


@pytest.mark.parametrize("fmt", ["txt.gz", "txt.zst", "jsonl", "jsonl.gz"])
def test_text_not_utf8_is_placed(tmp_path, monkeypatch, fmt):
    # Text that is not UTF-8 is named with where it fails: the byte offset and line of a
    # file's text (read again to find them).
    from bpe_cffi import counting
    monkeypatch.setattr(counting, "JSONL_BLOCK_CHARS", 1 << 12)
    line = b'{"text": "fine \xc3\xa9"}\n' if fmt.startswith("jsonl") else "fine é\n".encode()
    data = line * 5000 + line.replace(b"\xc3\xa9", b"\xff") + line
    pack = {"gz": gzip.compress, "zst": zstandard.ZstdCompressor().compress}.get(
        fmt.split(".")[-1], bytes)
    path = tmp_path / f"bad.{fmt}"
    path.write_bytes(pack(data))
    offset = len(line) * 5000 + line.index(b"\xc3")
    # In blocks of lines parsed by other processes too: the file is read again to place it.
    for workers in (1, 2) if fmt.startswith("jsonl") else (1,):
        with pytest.raises(ValueError, match=rf"bad.{fmt} is not valid UTF-8: byte offset "
                                             rf"{offset} of its text, line 5001 "):
            bpe_cffi.count_words(path, num_workers=workers)
    cut = tmp_path / f"cut.{fmt}"  # a character cut short at the end
    cut.write_bytes(pack(data[:len(line) * 2] + b"\xc3"))
    with pytest.raises(ValueError, match=rf"byte offset {len(line) * 2} of its text, at its "
                                         "end"):
        bpe_cffi.count_words(cut, num_workers=1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "\n", "é", "€", "😀", "\r"]), max_size=30),
       st.sampled_from([b"", b"\xff", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3A",
                        b"\xed\xa0\x80"]),
       st.lists(st.sampled_from(["b", "\n", "ü"]), max_size=5), st.integers(1, 9))
def test_standard_input_places_a_bad_byte_as_a_file_is_placed(head, bad, tail, block):
    # Standard input cannot be read again: its reader counts what it decoded, and names a bad
    # byte's offset and line as first_bad_utf8 names a file's, whatever the blocks it reads
    # (a character's bytes cut by a block's end are held for the next).
    import io

    from bpe_cffi.sources import first_bad_utf8
    data = "".join(head).encode() + bad + "".join(tail).encode()
    reader = documents._StdinText(io.BytesIO(data))
    try:
        text = "".join(iter(lambda: reader.read(block), ""))
    except UnicodeDecodeError as e:
        assert e.place == first_bad_utf8(io.BytesIO(data)) != ""
    else:
        assert text == data.decode("utf-8") and first_bad_utf8(io.BytesIO(data)) == ""


def test_cli_places_a_bad_byte_of_standard_input(tmp_path):
    data = "fine é\n".encode() * 3 + b"ab\xffcd\n"
    proc = subprocess.run([sys.executable, "-m", "bpe_cffi", "train", "-", "--vocab-size",
                           "300", "--out", str(tmp_path / "tok"), "--quiet"],
                          input=data, capture_output=True)
    assert proc.returncode == 1
    assert b"- is not valid UTF-8: byte offset 26 of its text, line 4 (invalid start byte)" \
        in proc.stderr, proc.stderr


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name, bad, message", [
    ("broken.jsonl", '{"text": broken', "not valid JSON"),
    ("broken.jsonl.gz", '{"text": broken', "not valid JSON"),
    ("surrogate.jsonl", '{"text": "a\\ud800b"}', "lone surrogate"),
    ("surrogate.jsonl.gz", '{"text": "a\\udc00b"}', "lone surrogate"),
])
def test_a_bad_record_is_named_by_its_line_in_the_file(tmp_path, workers, name, bad, message):
    # Blocks of lines parsed by other processes named the line within the block; a lone
    # surrogate escaped in a record failed later, as UTF-8, with no file named.
    lines = [json.dumps({"text": f"record {i} " * 30}) for i in range(60_000)]
    lines[50_000] = bad
    path = tmp_path / name
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data, 1) if name.endswith(".gz") else data)
    with pytest.raises(ValueError, match=f"{name}:50001: .*{message}"):
        bpe_cffi.count_words(str(path), num_workers=workers)
    tok = bpe_cffi.Tokenizer(*bpe_cffi.train_bpe(bpe_cffi.sample_path(), 300))
    with pytest.raises(ValueError, match=f"{name}:50001: .*{message}"):
        tok.encode_file(str(path), str(tmp_path / "ids.npy"), num_workers=workers)
    escaped_pair = tmp_path / "pair.jsonl"  # a pair, and an escaped backslash: both fine
    escaped_pair.write_text(json.dumps({"text": "\U0001F600 \\ud800"}) + "\n")
    assert bpe_cffi.count_words(str(escaped_pair), num_workers=workers)[b"ud"] == 1


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_file_url_reads_as_its_path_in_every_format(corpus, tok, tmp_path, fmt, workers):
    # JSON lines, gzip and zstandard files were opened as local paths: a URL (fsspec's, as
    # the plain text and Parquet readers take) was "No such file or directory".
    url = corpus[fmt].as_uri()
    assert bpe_cffi.count_words(url, [EOT], num_workers=workers) == \
        bpe_cffi.count_words(corpus[fmt], [EOT], num_workers=workers)
    tok.encode_file(url, tmp_path / "ids.npy", num_workers=workers)
    want = tok.encode(corpus["plain"].read_bytes().decode("utf-8"))
    assert np.load(tmp_path / "ids.npy").tolist() == want


@pytest.mark.parametrize("workers", [1, 2])
def test_a_parquet_text_not_utf8_or_not_text_names_the_file_and_record(tmp_path, workers):
    # Invalid UTF-8 in a string column was a bare UnicodeDecodeError naming no file.
    bad = tmp_path / "bad.parquet"
    texts = pa.array([b"ok"] * 9 + [b"caf\xe9"], pa.binary()).view(pa.string())
    pq.write_table(pa.table({"text": texts}), bad, row_group_size=4)
    with pytest.raises(ValueError, match="bad.parquet: record 9: column 'text' holds text "
                                         "that is not valid UTF-8"):
        bpe_cffi.count_words(str(bad), num_workers=workers)
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": ["a"] * 5 + [None]}), nulls, row_group_size=2)
    with pytest.raises(ValueError, match="nulls.parquet: record 5: column 'text' holds None"):
        bpe_cffi.count_words(str(nulls), num_workers=workers)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("name", ["long.jsonl", "long.jsonl.gz"])
def test_a_json_integer_longer_than_int_takes_is_read(tmp_path, workers, name):
    # Python's int() takes 4 300 digits at most: the ValueError named neither file nor line.
    path = tmp_path / name

    def write(data: str) -> None:
        path.write_bytes(gzip.compress(data.encode()) if name.endswith(".gz") else data.encode())

    write('{"text": "a b"}\n{"id": ' + "1" * 5000 + ', "text": "b c"}\n')
    assert bpe_cffi.count_words(str(path), num_workers=workers) == \
        {b"a": 1, b" b": 1, b"b": 1, b" c": 1}
    write('{"text": ' + "1" * 5000 + '}\n')  # as the text field: no text
    with pytest.raises(ValueError, match=f"{name}:1: the record's text field 'text' holds inf"):
        bpe_cffi.count_words(str(path), num_workers=workers)


def test_a_block_of_json_lines_parsed_a_slice_at_a_time(monkeypatch):
    # A block's records are parsed a slice of lines at a time (a dict a record took ~28 bytes
    # a byte of tiny ones): the documents, and the line an error names, as in one pass.
    lines = [json.dumps({"text": f"doc {k}", "id": k}) for k in range(10)]
    block = "\n".join(lines[:4] + ["", " \t"] + lines[4:]) + "\n"
    want = documents.jsonl_block_documents(block, "b.jsonl", "text")
    assert want == [f"doc {k}" for k in range(10)]
    monkeypatch.setattr(documents, "_PARSE_LINES", 3)
    assert documents.jsonl_block_documents(block, "b.jsonl", "text") == want
    assert documents.jsonl_block_documents(block.encode(), "b.jsonl", "text") == want
    for bad, message in (('{"text": 1}', "holds 1"), ("{", "not valid JSON"),
                         ('{"id": 2}', "has no text field")):
        broken = block.replace(lines[8], bad)  # the 11th line, in the fourth slice
        with pytest.raises(documents.BlockOfLinesError, match=rf"b.jsonl .*:11: .*{message}"):
            documents.jsonl_block_documents(broken, "b.jsonl", "text")
