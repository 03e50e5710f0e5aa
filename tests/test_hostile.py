"""Reliability: hostile files and arguments, C entry points called badly, worker errors,
Ctrl-C, start methods. Nothing may crash, hang or leave half-written output."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import bpe_cffi
from bpe_cffi import counting, encode_file, tally
from bpe_cffi.counter import arrays_to_counts
from bpe_cffi.patterns import char_classes, pretokenizer
from bpe_cffi.pool import pool_job, process_pool
from bpe_cffi._lib import ffi, lib

import reference

EOT = "<|endoftext|>"
REGEX_GPT2 = "(?:" + bpe_cffi.GPT2_PATTERN + ")"  # split by the regex module, not in C


def write(tmp_path, data, name="c.txt"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def train_quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bpe_cffi.train_bpe(*args, **kwargs)


# ---- hostile files -------------------------------------------------------------------------

@pytest.mark.slow
def test_20mb_single_pretoken(tmp_path):
    path = write(tmp_path, b"a" * 20_000_000)
    assert bpe_cffi.count_words(path) == {b"a" * 20_000_000: 1}
    vocab, merges = train_quiet(path, 300)
    # Each merge doubles the longest run; 20e6 = 0b1001100010010110100000000.
    assert merges[:3] == [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"aaaa")]
    assert vocab[256 + len(merges) - 1] == b"a" * 20_000_000
    tok = bpe_cffi.Tokenizer(vocab, merges)
    assert len(set(vocab.values())) == len(vocab)  # (what reference_encode_run assumes)
    assert tok.encode("a" * 2_000_000) == reference_encode_run(tok, 2_000_000)


_LONG_WORD_MEMORY = textwrap.dedent("""
    import os, resource, sys, tempfile
    import bpe_cffi
    path = os.path.join(tempfile.mkdtemp(), "runs.txt")
    with open(path, "w") as f:
        f.write(" ".join("a" * k for k in range(1, 300)) * 3)  # runs of a merge into tokens
    tok = bpe_cffi.Tokenizer(*bpe_cffi.train_bpe(path, 400, []))
    n = 5_000_000
    text = "a" * n
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ids = tok.encode_to_numpy(text)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(grown * 1024 / n)
""")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
def test_long_pretoken_memory_per_byte():
    # One pre-token of 5 MB: its BPE once took 40 bytes of peak memory per byte of text (64-bit
    # links, 16-byte heap entries, a token array beside the output), then 24 (32-bit links and
    # heap), 8.3 now (csrc/long_word.c): 1 for the text's UTF-8, 4 for the output ids, in
    # which the tokens live, and 4 for the ranks of their pairs.
    out = subprocess.run([sys.executable, "-c", _LONG_WORD_MEMORY], capture_output=True,
                         text=True, check=True).stdout
    assert float(out) < 12, f"{float(out):.1f} bytes of peak memory per byte of text"


def reference_encode_run(tok, n):
    """The ids of a run of n "a" by one pass a merge, in rank order, each merging every
    occurrence of its pair left to right (reference.merge_word). For a learned table, where a
    merge's token is new and only later merges take it, that is the rule of spec 2 (lowest
    rank first, leftmost among equals): a pass can make no pair of its rank or lower."""
    tokens = [b"a"] * n
    for pair in tok.merges:
        tokens = reference.merge_word(tokens, pair)
    return [tok.token_to_id[t] for t in tokens]


@pytest.mark.parametrize("name, text", [
    ("nul bytes", "a\x00b \x00\x00 c\x00"),
    ("crlf", "line one\r\nline two\r\n\r\nthree\r\n"),
    ("bom", "\ufeffhello world \ufeff again"),
    ("no whitespace", "abc,def;ghi!jkl" * 50),
    ("only whitespace", " \t\n\r\u3000\u00a0" * 20),
    ("regex metacharacters in text", "[.*+?](a|b)\\d{2}^$ " * 10),
])
def test_odd_files_match_reference(tmp_path, name, text):
    path = write(tmp_path, text)
    got = train_quiet(path, 256 + 1 + 40, [EOT])
    want = reference.train_text(text, 256 + 1 + 40, [EOT])
    assert got[1] == want[1]
    tok = bpe_cffi.Tokenizer(*got, [EOT])
    assert tok.encode(text) == reference.encode(text, *got, [EOT])
    assert tok.decode(tok.encode(text)) == text


def test_a_thousand_special_tokens(tmp_path):
    specials = [f"<|s{i}|>" for i in range(1000)]
    text = "".join(f"word{i % 7} {specials[i]} more{i % 3}" for i in range(1000))
    path = write(tmp_path, text)
    vocab, merges = train_quiet(path, 256 + 1000 + 30, specials)
    assert merges == reference.train_text(text, 256 + 1000 + 30, specials)[1]
    assert [vocab[256 + len(merges) + i] for i in range(1000)] == [s.encode() for s in specials]
    tok = bpe_cffi.Tokenizer(vocab, merges, specials)
    assert tok.encode(text) == reference.encode(text, vocab, merges, specials)


def test_specials_with_metacharacters_and_prefixes(tmp_path):
    specials = ["[.*]", "(a|b)", "\\d+", "<s>", "<s><s>", "<s"]
    text = "x[.*]y(a|b)z\\d+<s><s><s>w<s <sx" * 20
    path = write(tmp_path, text)
    got = train_quiet(path, 256 + 6 + 30, specials)
    assert got[1] == reference.train_text(text, 256 + 6 + 30, specials)[1]
    tok = bpe_cffi.Tokenizer(*got, specials)
    assert tok.encode(text) == reference.encode(text, *got, specials)


def test_vocab_larger_than_corpus_warns(tmp_path):
    path = write(tmp_path, "ab ab ab")
    with pytest.warns(UserWarning, match="ran out of pairs after 2 of"):
        vocab, merges = bpe_cffi.train_bpe(path, 10_000, [EOT])
    assert len(merges) == 2 and vocab[258] == EOT.encode()


@pytest.mark.parametrize("vocab_size", [2**32, 2**40])
def test_huge_vocab_size_warns_instead_of_allocating(tmp_path, vocab_size):
    # The merge arrays were sized by the request: 2**40 raised "Unable to allocate 4.00 TiB".
    path = write(tmp_path, "ab ab ab cd")
    with pytest.warns(UserWarning, match="ran out of pairs after 4 of"):
        vocab, merges = bpe_cffi.train_bpe(path, vocab_size, [EOT])
    assert len(merges) == 4  # ab, " ab", " c", " cd"
    with pytest.warns(UserWarning, match="ran out of pairs"):
        bpe_cffi.train_from_counts({b"ab": 3}, vocab_size)


def test_directory_and_fifo_are_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        bpe_cffi.count_words(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        bpe_cffi.count_words(fifo)


def test_a_loop_of_links_is_named_so(tmp_path):
    # os.path.exists is False for a loop of symbolic links: it was reported as no such file.
    import errno
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for call in (bpe_cffi.count_words, bpe_cffi.Tokenizer.load):
        with pytest.raises(OSError) as caught:
            call(tmp_path / "a")
        assert caught.value.errno == errno.ELOOP


def test_worker_counts_are_bounded(tmp_path, monkeypatch):
    # num_workers=10**6 once forked thousands of processes before any work: counts past any
    # machine are refused, and encode_file starts no more processes than it has ranges.
    path = tmp_path / "t.txt"
    path.write_text("a b c " * 1000, encoding="utf-8")
    for bad in (0, -1, counting.MAX_WORKERS + 1, 10**6):
        with pytest.raises(ValueError, match=f"num_workers must be from 1 to 4096, got {bad}"):
            bpe_cffi.count_words(path, num_workers=bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="num_workers must be an int or None"):
            bpe_cffi.count_words(path, num_workers=bad)
    assert bpe_cffi.count_words(path, num_workers=np.int64(2)) == \
        bpe_cffi.count_words(path, num_workers=1)  # a numpy int, as vocab_size takes
    started = []  # (processes or threads, how many)
    real_pool, real_threads = encode_file.process_pool, encode_file.ThreadPoolExecutor
    monkeypatch.setattr(encode_file, "process_pool",
                        lambda n, *args: started.append(("processes", n)) or real_pool(n, *args))
    monkeypatch.setattr(encode_file, "ThreadPoolExecutor",
                        lambda n: started.append(("threads", n)) or real_threads(n))
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 2_000)
    path.write_text("a b c|" * 1000, encoding="utf-8")  # "|": a special token, cut at
    # plain text on threads with a C scanner's pattern, in processes with a regex
    for pattern, kind in (("gpt2", "threads"), (r"\S+|\s+", "processes")):
        started.clear()
        tok = bpe_cffi.Tokenizer({i: bytes([i]) for i in range(256)}, [], ["|"], pattern)
        tok.encode_file(path, tmp_path / "ids.npy", num_workers=200)
        edges = encode_file.Edges([b"|"], tok.pretokenizer.edges)
        ranges = len(encode_file.plan_file(str(path), edges, 2_000))
        assert started == [(kind, ranges)] and 1 < ranges < 200
        assert np.load(tmp_path / "ids.npy").tolist() == tok.encode("a b c|" * 1000)


def _truncate_once_planned(monkeypatch, module, path, size: int) -> None:
    """Has module's plan_file cut the file at path to size bytes once it has planned it."""
    plan = module.plan_file

    def plan_then_truncate(*args, **kwargs):
        ranges = plan(*args, **kwargs)
        with open(path, "r+b") as f:
            f.truncate(size)
        return ranges

    monkeypatch.setattr(module, "plan_file", plan_then_truncate)


def test_file_truncated_while_read(tmp_path, monkeypatch):
    path = write(tmp_path, "hello world " * 300_000)
    _truncate_once_planned(monkeypatch, counting, path, 1000)
    with pytest.raises(OSError, match="changed while being read"):
        bpe_cffi.count_words(path, num_workers=1)


def test_file_truncated_while_encoded_on_threads(tmp_path, monkeypatch):
    # A plain file's ranges are read into buffers kept from range to range: one cut short
    # since it was planned is an error, not the ids of what the buffer held before.
    path = write(tmp_path, "hello world " * 3_000)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 5_000)
    _truncate_once_planned(monkeypatch, encode_file, path, 20_000)
    tok = bpe_cffi.Tokenizer({i: bytes([i]) for i in range(256)}, [])
    with pytest.raises(OSError, match="expected .* bytes at offset .*, got "):
        tok.encode_file(path, tmp_path / "ids.npy", num_workers=2)


def test_small_file_truncated_while_encoded(tmp_path, monkeypatch):
    # Small files go to the pool in runs, with the sizes planned: one cut short since is an
    # error, as a large file's range is (one that grew is read as planned, as theirs are).
    paths = [write(tmp_path, "hello world " * 3, f"f{k}.txt") for k in range(4)]
    jobs = encode_file._jobs
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 100)

    def jobs_then_truncate(*args, **kwargs):
        planned = jobs(*args, **kwargs)
        with open(paths[1], "r+b") as f:
            f.truncate(5)
        return planned

    monkeypatch.setattr(encode_file, "_jobs", jobs_then_truncate)
    tok = bpe_cffi.Tokenizer({i: bytes([i]) for i in range(256)}, [], [EOT])
    with pytest.raises(OSError, match="f1.txt changed while being read"):
        tok.encode_file(paths, tmp_path / "ids.npy", num_workers=2)


def test_worker_error_keeps_type_and_message(tmp_path):
    good = ("some text here " * 100_000).encode()
    path = write(tmp_path, good + b" \xff\xfe " + good)  # several chunks; bad one in the middle
    with pytest.raises(ValueError, match=f"byte offset {len(good) + 1}"):
        bpe_cffi.count_words(path, num_workers=2)
    with pytest.raises(ValueError, match=f"byte offset {len(good) + 1}"):
        bpe_cffi.count_words(path, num_workers=2, pattern=REGEX_GPT2)


# ---- C entry points with hostile arguments -------------------------------------------------

def i64(*xs):
    return ffi.from_buffer("int64_t[]", np.array(xs, np.int64))


def test_trainer_rejects_bad_layouts():
    out = ffi.new("bpe_trainer **")
    blob = b"abcd"
    cases = [  # (n_bytes, offsets, counts, n_words)
        (-1, i64(0), i64(), 0),
        (4, i64(0, 3, 2, 4), i64(1, 1, 1), 3),   # offsets out of order
        (4, i64(1, 4), i64(1), 1),               # not starting at 0
        (4, i64(0, 5), i64(1), 1),               # past the end
        (4, i64(0, 4), i64(-1), 1),              # negative count
        (4, i64(0, 4), i64(1), -2),              # negative number of words
    ]
    for n_bytes, offsets, counts, n in cases:
        assert lib.bpe_trainer_new(blob, n_bytes, offsets, counts, n, 0, out) == lib.BPE_EINVAL
    assert lib.bpe_trainer_new(blob, 4, i64(0, 4), i64(1), 1, 1, out) == lib.BPE_EINVAL  # limit
    assert lib.bpe_trainer_new(blob, 4, i64(0, 4), i64(1), 1, 0, out) == lib.BPE_OK
    t = out[0]
    done = ffi.new("int64_t *")
    assert lib.bpe_trainer_step(t, -1, ffi.NULL, ffi.NULL, ffi.NULL, done) == lib.BPE_EINVAL
    assert lib.bpe_trainer_step(t, 3, ffi.NULL, ffi.NULL, ffi.NULL, done) == lib.BPE_EINVAL
    assert lib.bpe_trainer_step(ffi.NULL, 0, ffi.NULL, ffi.NULL, ffi.NULL, done) == lib.BPE_EINVAL
    lib.bpe_trainer_free(t)
    lib.bpe_trainer_free(ffi.NULL)


def test_encoder_rejects_bad_ids_and_pieces():
    out = ffi.new("bpe_encoder **")
    byte_ids = ffi.from_buffer("int32_t[]", np.arange(256, dtype=np.int32))
    one = lambda v: ffi.from_buffer("int32_t[]", np.array([v], np.int32))  # noqa: E731
    assert lib.bpe_encoder_new(byte_ids, one(1), one(2), one(300), 1, 257, out) == lib.BPE_EINVAL
    assert lib.bpe_encoder_new(byte_ids, one(-5), one(2), one(256), 1, 257, out) == lib.BPE_EINVAL
    bad_bytes = ffi.from_buffer("int32_t[]", np.full(256, 999, np.int32))
    assert lib.bpe_encoder_new(bad_bytes, one(1), one(2), one(256), 1, 257, out) == lib.BPE_EINVAL
    assert lib.bpe_encoder_new(byte_ids, one(97), one(98), one(256), 1, 257, out) == lib.BPE_OK
    enc = out[0]
    # Whole tokens: ids outside the vocabulary, offsets that go back, no offsets: refused, and
    # the encoder keeps the whole tokens it had.
    word = ffi.from_buffer("uint8_t[]", b"abab")
    for offsets, whole_ids, count in (([0, 4], [257], 1), ([0, 4], [-1], 1), ([0, 3, 2], [5, 6], 2),
                                      ([1, 4], [5], 1), ([0, 0], [5], -1)):
        assert lib.bpe_encoder_set_whole_tokens(enc, word, i64(*offsets),
                                                ffi.from_buffer("int32_t[]", np.array(
                                                    whole_ids, np.int32)), count) == lib.BPE_EINVAL
    assert lib.bpe_encoder_set_whole_tokens(enc, word, ffi.NULL, one(5), 1) == lib.BPE_EINVAL
    assert lib.bpe_encoder_set_whole_tokens(ffi.NULL, word, i64(0, 4), one(5), 1) == lib.BPE_EINVAL
    ids = ffi.new("int32_t[]", 16)
    n = ffi.new("int64_t *")
    for scanner in (pretokenizer("gpt2").scanner, pretokenizer(r"\S+").scanner):
        def encode(text, n_text, starts, ends, then_id, room=16, scanner=scanner):
            then = ffi.from_buffer("int32_t[]", np.array(then_id, np.int32))
            return lib.bpe_encode(enc, scanner, ffi.NULL, text, n_text, i64(*starts), i64(*ends),
                                  then, len(then_id), ids, room, n, ffi.NULL)
        assert encode(b"abab", 4, [0], [4], [-1], room=3) == lib.BPE_EINVAL  # no room
        assert encode(b"abab", 4, [0], [4], [7], room=4) == lib.BPE_EINVAL  # none for the special
        assert encode(b"abab", -1, [0], [4], [-1]) == lib.BPE_EINVAL
        assert encode(b"abab", 4, [0], [5], [-1]) == lib.BPE_EINVAL  # past the end
        assert encode(b"abab", 4, [3], [2], [-1]) == lib.BPE_EINVAL
        assert encode(b"abab", 4, [-1], [2], [-1]) == lib.BPE_EINVAL
        assert encode(b"abab", 4, [0], [4], [-2]) == lib.BPE_EINVAL
        assert encode(b"ab\xff", 3, [0], [3], [-1]) == lib.BPE_EUTF8
        assert encode(b"ab\xffab", 5, [0, 3], [2, 5], [9, -1]) == lib.BPE_OK  # no piece's byte
        assert list(ids[0:n[0]]) == [256, 9, 256]
        assert encode(b"abab", 4, [0], [4], [-1]) == lib.BPE_OK
        assert list(ids[0:n[0]]) == [256, 256]
        none = ffi.NULL
        assert lib.bpe_encode(enc, scanner, none, none, 0, none, none, none, 0, none, 0, n,
                              none) == lib.BPE_OK and n[0] == 0
        # no pieces given: the whole text, which must then be one piece
        assert lib.bpe_encode(enc, scanner, none, b"abab", 4, none, none, none, 1, ids, 4, n,
                              none) == lib.BPE_OK and list(ids[0:n[0]]) == [256, 256]
        assert lib.bpe_encode(enc, scanner, none, b"abab", 4, none, none, none, 2, ids, 4, n,
                              none) == lib.BPE_EINVAL
        assert lib.bpe_encode(enc, scanner, none, b"abab", 4, i64(0), none, none, 1, ids, 4, n,
                              none) == lib.BPE_EINVAL
        assert lib.bpe_encode(none, scanner, none, b"ab", 2, none, none, none, 1, ids, 4, n,
                              none) == lib.BPE_EINVAL
        assert lib.bpe_encode(enc, none, none, b"ab", 2, none, none, none, 1, ids, 4, n,
                              none) == lib.BPE_EINVAL
    # The same checks where the encoder scans units (from 64 KB of pieces).
    big = b"ab " * 30_000
    room = len(big) + 1
    many = ffi.new("int32_t[]", room)
    ends = ffi.new("int64_t[]", 2)
    for scanner in (pretokenizer("gpt2").scanner, pretokenizer(r"\S+").scanner):
        def encode_big(starts, stops, then_id, cap=room, text=big):
            then = ffi.from_buffer("int32_t[]", np.array(then_id, np.int32))
            return lib.bpe_encode(enc, scanner, ffi.NULL, text, len(text), i64(*starts),
                                  i64(*stops), then, len(then_id), many, cap, n, ends)
        assert encode_big([0], [len(big)], [-1], cap=len(big) - 1) == lib.BPE_EINVAL
        assert encode_big([0], [len(big) + 1], [-1]) == lib.BPE_EINVAL
        assert encode_big([0, 10], [len(big), 9], [-1, -1]) == lib.BPE_EINVAL
        bad = big[:40_000] + b"\xc3(" + big[40_000:]
        assert encode_big([0], [len(bad)], [-1], text=bad, cap=len(bad)) == lib.BPE_EUTF8
        assert encode_big([0, 30], [30, len(big)], [5, -1]) == lib.BPE_OK
        assert ends[0] == 21 and ends[1] == n[0] == 60_001  # ab then 2 ids each 3 bytes, special
    lib.bpe_encoder_free(enc)


def test_scanner_rejects_bad_arguments():
    out = ffi.new("bpe_scanner **")
    classes = ffi.from_buffer("uint8_t[]", char_classes())
    full = len(char_classes())
    assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 3, 0, classes, full, out) == lib.BPE_OK
    lib.bpe_scanner_free(out[0])
    lib.bpe_scanner_free(ffi.NULL)
    assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 3, 0, classes, 10, out) == lib.BPE_EINVAL
    assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 3, 0, ffi.NULL, full, out) == lib.BPE_EINVAL
    assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 0, 0, classes, full, out) == lib.BPE_EINVAL
    assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 3, 2, classes, full, out) == lib.BPE_EINVAL
    assert lib.bpe_scanner_new(-1, 3, 0, classes, full, out) == lib.BPE_EINVAL
    assert lib.bpe_scanner_new(99, 3, 0, classes, full, out) == lib.BPE_EINVAL
    assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 3, 0, classes, full, ffi.NULL) == lib.BPE_EINVAL
    # A pieces scanner reads no class, but a table given is checked whole: a short one was
    # read past its end (one a code point short: the checks' reads stayed inside it, and
    # it was taken).
    short = ffi.from_buffer("uint8_t[]", char_classes()[:-1])
    assert lib.bpe_scanner_new(lib.BPE_SCAN_PIECES, 3, 0, short, full - 1, out) == lib.BPE_EINVAL
    for wrong in (1 | 4, 3 | 8, 0 | 12, 9 << 4):  # a case for a number, no such case or fold
        bad = np.array(char_classes())
        bad[0x41] = wrong
        assert lib.bpe_scanner_new(lib.BPE_SCAN_GPT2, 3, 0, ffi.from_buffer("uint8_t[]", bad),
                                   full, out) == lib.BPE_EINVAL
    # ASCII whitespace that the table makes a letter: the units take it for whitespace all the
    # same, and GPT-2's scanner, given " \t" with a letter for a space, never moved on.
    for family in (lib.BPE_SCAN_GPT2, lib.BPE_SCAN_CL100K, lib.BPE_SCAN_O200K):
        for space in b"\t\n\x0b\x0c\r ":
            bad = np.array(char_classes())
            bad[space] = bad[ord("a")]
            assert lib.bpe_scanner_new(family, 3, 0, ffi.from_buffer("uint8_t[]", bad), full,
                                       out) == lib.BPE_EINVAL, (family, space)
    n = ffi.new("int64_t *")
    ends = ffi.new("int64_t[]", 4)
    scanner = pretokenizer("gpt2").scanner
    assert lib.bpe_scanner_split(scanner, b"a b c", 5, ends, 4, n) == lib.BPE_EINVAL  # room
    assert lib.bpe_scanner_split(scanner, b"ab", -1, ends, 4, n) == lib.BPE_EINVAL
    assert lib.bpe_scanner_split(scanner, b"a b", 3, ends, 4, n) == lib.BPE_OK and n[0] == 2
    found, which = ffi.new("int64_t[]", 4), ffi.new("int32_t[]", 4)
    offsets = ffi.new("int64_t[]", [0, 2, 3])  # "ba" then "b": longest first

    def find(text, offsets=offsets, k=2, start=0, cap=4, n_found=n):
        return lib.bpe_find_specials(text, len(text), start, b"bab", offsets, k, found, which,
                                     cap, n_found)
    assert find(b"abab") == lib.BPE_OK and n[0] == 2 and list(which[0:2]) == [0, 1]
    assert find(b"abab", offsets=ffi.new("int64_t[]", [0, 1, 3])) == lib.BPE_EINVAL  # order
    assert find(b"abab", offsets=ffi.new("int64_t[]", [0, 0, 3])) == lib.BPE_EINVAL  # empty
    assert find(b"abab", k=0) == lib.BPE_EINVAL
    assert find(b"abab", start=-1) == lib.BPE_EINVAL
    assert find(b"abab", cap=-1) == lib.BPE_EINVAL
    assert find(b"abab", n_found=ffi.NULL) == lib.BPE_EINVAL


def test_decoder_rejects_bad_tables_and_ids():
    out = ffi.new("bpe_decoder **")
    new = lib.bpe_decoder_new
    assert new(b"abc", 3, i64(0, 2), i64(2, 2), 2, out) == lib.BPE_EINVAL  # past the end
    assert new(b"abc", 3, i64(-1), i64(1), 1, out) == lib.BPE_EINVAL
    assert new(b"abc", 3, i64(0), i64(-2), 1, out) == lib.BPE_EINVAL
    assert new(b"abc", -1, i64(0), i64(1), 1, out) == lib.BPE_EINVAL
    assert new(b"abc", 3, i64(0, 0, 1), i64(1, -1, 2), 3, out) == lib.BPE_OK  # id 1: none
    d = out[0]
    n, bad = ffi.new("int64_t *"), ffi.new("int64_t *")
    buf = ffi.new("uint8_t[]", 8)
    assert lib.bpe_decoder_length(d, i64(0, 2, 1), 3, n, bad) == lib.BPE_EINVAL and bad[0] == 2
    assert lib.bpe_decoder_length(d, i64(0, 2, 3), 3, n, bad) == lib.BPE_EINVAL and bad[0] == 2
    assert lib.bpe_decoder_length(d, i64(2, 0, 2), 3, n, bad) == lib.BPE_OK and n[0] == 5
    assert lib.bpe_decoder_decode(d, i64(2, 0, 2), 3, buf, 4, n) == lib.BPE_EINVAL  # no room
    assert lib.bpe_decoder_decode(d, i64(2, -7), 2, buf, 8, n) == lib.BPE_EINVAL
    assert lib.bpe_decoder_decode(d, i64(2, 0, 2), 3, buf, 8, n) == lib.BPE_OK
    assert bytes(buf[0:n[0]]) == b"bcabc"
    lib.bpe_decoder_free(d)
    lib.bpe_decoder_free(ffi.NULL)


def test_ids_far_beyond_the_vocabulary_size():
    # Legal ids up to 2**31 - 1: nothing may be sized by the largest id (the encoder's
    # whole-token table is indexed by id, so it is left out here).
    far = 2**31 - 2  # and the special gets 2**31 - 1: the vocabulary size is 2**31
    vocab = {i: bytes([i]) for i in range(256)} | {far: b"ab", 300: b"abc"}
    tok = bpe_cffi.Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")], [EOT])
    text = f"ab abc{EOT}ab"
    want = [far, 32, 300, far + 1, far]
    assert tok.encode(text) == want
    assert tok.encode_to_numpy(text).tolist() == want
    assert bpe_cffi.Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"c")], [EOT],
                              pattern=REGEX_GPT2).encode(text) == want


@pytest.mark.parametrize("length", [16384, 32768, 65536])
def test_o200k_word_that_fills_its_table(tmp_path, length):
    """One word of letters, as long as a table's arena holds: splitting it, o200k's scanner
    looked for a contraction one byte past the arena (the sanitizer run reports such a read;
    the counts were right either way)."""
    path = write(tmp_path, "a" * length)
    want = {("a" * length).encode(): 1}
    assert bpe_cffi.count_words(path, pattern="o200k") == want
    # Encoded without a cache (64 KB or more), the same words are split from the call's table.
    tok = bpe_cffi.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern="o200k",
                             cache_bytes=0)
    copies = 65536 // length + 1
    assert tok.encode(("a" * length + " ") * copies) == ([97] * length + [32]) * copies


_FAILED_PART = """
import gc, bpe_cffi
tok = bpe_cffi.Tokenizer({i: bytes([i]) for i in range(256)}, [], num_threads=2)
for _ in range(3):
    try:
        tok._encoder.encode(b"hello world " * 400_000 + b"\\xff")  # parts for two threads
    except ValueError:
        pass
    gc.collect()
print("ok")
"""


def test_a_part_that_fails_on_a_thread_leaves_nothing_to_crash_on():
    # The part's memoryview was still exported by its C buffer when the error, kept in a cycle
    # with its traceback, was collected: the collector failed to clear the memoryview
    # (BufferError) and the process died of a segfault. In a child process, so that the old
    # behaviour fails the test instead of ending the run.
    out = subprocess.run([sys.executable, "-c", _FAILED_PART], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["ok"], out.stderr[-2000:]


def test_counters_reject_bad_pieces():
    c = ffi.new("bpe_counter **")
    assert lib.bpe_counter_new(c) == lib.BPE_OK
    counter = c[0]
    scanner = pretokenizer("gpt2").scanner
    assert lib.bpe_counter_add(counter, b"ab", 2, i64(0, 3), i64(1), 1) == lib.BPE_EINVAL
    assert lib.bpe_counter_add(counter, b"ab", 2, i64(0, 2), i64(-1), 1) == lib.BPE_EINVAL
    assert lib.bpe_counter_add_units(counter, scanner, b"ab", 2, i64(0), i64(5), 1) == \
        lib.BPE_EINVAL
    assert lib.bpe_counter_add_units(counter, scanner, b"\xc3(", 2, i64(0), i64(2), 1) == \
        lib.BPE_EUTF8
    assert lib.bpe_counter_add_units(counter, ffi.NULL, b"ab", 2, i64(0), i64(2), 1) == \
        lib.BPE_EINVAL
    assert lib.bpe_counter_split_units(counter, ffi.NULL, counter) == lib.BPE_EINVAL
    # Split into itself: the keys being split would move as the same table grows.
    assert lib.bpe_counter_add_units(counter, scanner, b"a b", 3, i64(0), i64(3), 1) == lib.BPE_OK
    assert lib.bpe_counter_split_units(counter, scanner, counter) == lib.BPE_EINVAL
    lib.bpe_counter_free(counter)
    assert lib.bpe_counter_new(ffi.NULL) == lib.BPE_EINVAL


def test_every_error_code_has_a_clear_exception():
    from bpe_cffi._lib import check
    codes = {name: getattr(lib, name) for name in dir(lib) if name.startswith("BPE_E")}
    # Each code as the Python exception a user expects of it, its message saying what failed.
    expected = {"BPE_ENOMEM": (MemoryError, "out of memory"),
                "BPE_EINVAL": (ValueError, "invalid arguments"),
                "BPE_EOVERFLOW": (OverflowError, "does not fit in 64 bits"),
                "BPE_EINTERNAL": (RuntimeError, "internal error"),
                "BPE_EUTF8": (ValueError, "not valid UTF-8")}
    assert set(codes) == set(expected)  # a new code needs its exception here too
    for name, code in codes.items():
        exc, message = expected[name]
        with pytest.raises(exc, match=f"^call: .*{message}") as info:
            check(code, "call")
        assert type(info.value) is exc, name
    with pytest.raises(ValueError, match="not valid UTF-8"):
        bpe_cffi.Tokenizer({i: bytes([i]) for i in range(256)}, [])._encoder._call(
            b"a\xffc", None)


# ---- processes and signals -----------------------------------------------------------------

# The child handles SIGINT as a program in a terminal does, even when the tests run as a
# shell's background job, whose commands start with SIGINT ignored (and pass that on).
CHILD = textwrap.dedent("""
    import signal, sys, bpe_cffi
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print("started", flush=True)
    try:
        {call}
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        sys.exit(130)
    print("finished", flush=True)
""")


def _signal_group(proc: subprocess.Popen, sig: int):
    """Sends sig to the whole process group of proc (started in a session of its own), as a
    terminal's Ctrl-C or timeout(1) does, and waits for proc: (its stdout, its stderr,
    seconds to exit, whether its group outlived it). One still running 30 s later is killed
    with its group, and the wait fails."""
    os.killpg(proc.pid, sig)
    t = time.monotonic()
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"still running 30 s after signal {sig}") from None
    took = time.monotonic() - t
    time.sleep(0.5)
    try:
        os.killpg(proc.pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    return out, err, took, alive


def _interrupt(tmp_path, call):
    """Runs call in a child in its own process group, sends SIGINT to the whole group (as a
    terminal's Ctrl-C does) and returns (child output, seconds to exit, group still alive)."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(call=call)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=tmp_path)
    assert proc.stdout.readline().strip() == "started"
    time.sleep(0.8)  # into the pooled part (the whole job takes over 3 s)
    out, _, took, alive = _signal_group(proc, signal.SIGINT)
    return out, took, alive


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.txt"
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(240):  # about 88 MB: over 3 s on the plain path, even on 2 fast cores
            f.write(sample)
    return path


def test_ctrl_c_during_training(tmp_path, big_corpus):
    out, took, alive = _interrupt(
        tmp_path,
        f"bpe_cffi.train_bpe({str(big_corpus)!r}, 5000, num_workers=2, pattern={REGEX_GPT2!r})")
    assert "KeyboardInterrupt" in out and "finished" not in out
    assert took < 10
    assert not alive, "worker processes outlived the interrupted parent"


def test_ctrl_c_during_encode_file_keeps_old_output(tmp_path, big_corpus):
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 2000, [EOT])
    bpe_cffi.save(vocab, merges, tmp_path / "tok", [EOT])
    out_path = tmp_path / "ids.npy"
    np.save(out_path, np.arange(5, dtype=np.uint16))
    before = out_path.read_bytes()
    # The plain (regex) path takes several seconds here, so the interrupt lands mid-way.
    call = (f"t = bpe_cffi.Tokenizer.load({str(tmp_path / 'tok')!r}); "
            f"t = bpe_cffi.Tokenizer(t.id_to_token, t.merges, t.special_tokens, {REGEX_GPT2!r}); "
            f"t.encode_file({str(big_corpus)!r}, {str(out_path)!r}, num_workers=2)")
    out, took, alive = _interrupt(tmp_path, call)
    assert "KeyboardInterrupt" in out and "finished" not in out
    assert took < 10 and not alive
    assert out_path.read_bytes() == before  # the old output is untouched
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def _regex_tokenizer(tmp_path):
    """A tokenizer directory whose pattern the regex module splits: its encode_file of
    big_corpus takes several seconds, so a signal lands mid-way."""
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 2000, [EOT])
    bpe_cffi.save(vocab, merges, tmp_path / "tok", [EOT], pattern=REGEX_GPT2)
    return tmp_path / "tok"


# Kills one pool worker, as the out-of-memory killer does, 0.8 s into the call.
KILL_A_WORKER = """
import multiprocessing, threading, time
def kill_one():
    time.sleep(0.8)
    os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
threading.Thread(target=kill_one, daemon=True).start()
"""


def test_a_worker_that_dies_is_an_error_not_a_hang(tmp_path, big_corpus):
    # multiprocessing.Pool replaces a dead worker but drops its job: the wait for that job's
    # result never ended (encode_file, train_bpe).
    tok = _regex_tokenizer(tmp_path)
    for call in (f"bpe_cffi.Tokenizer.load({str(tok)!r}).encode_file("
                 f"{str(big_corpus)!r}, 'ids.npy', num_workers=2)",
                 f"bpe_cffi.train_bpe([{str(big_corpus)!r}] * 2, 5000, num_workers=2, "
                 f"pattern={REGEX_GPT2!r})"):
        script = "import os, signal, bpe_cffi\n" + KILL_A_WORKER + call
        proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE,
                                text=True, start_new_session=True, cwd=tmp_path)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"{call} hung after a worker died") from None
        assert proc.returncode == 1 and "WorkerDied: a worker process was killed by signal 9" \
            in err, err[-500:]
        assert sorted(os.listdir(tmp_path)) == ["tok"]  # no output, no spill directory


def test_ctrl_c_during_the_renames_of_save_leaves_all_old_or_all_new(tmp_path, monkeypatch):
    # A KeyboardInterrupt raised just after an os.replace, before it was noted, left a
    # directory of old and new files (and hidden .old links) that no loader could read.
    vocab = {i: bytes([i]) for i in range(256)}
    bpe_cffi.save(vocab, [], tmp_path, [EOT])
    old = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    vocab[256] = b"ab"
    replace, calls = os.replace, []

    def replace_then_ctrl_c(src, dst):
        replace(src, dst)
        calls.append(dst)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)  # as if it landed during the rename

    monkeypatch.setattr(os, "replace", replace_then_ctrl_c)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            bpe_cffi.save(vocab, [(b"a", b"b")], tmp_path, [EOT])
    finally:
        signal.signal(signal.SIGINT, before)
    new = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    assert sorted(new) == sorted(old) and all(new[name] != old[name] for name in new)
    assert bpe_cffi.Tokenizer.load(tmp_path).encode("ab") == [256]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_while_a_pool_starts_can_start_its_own():
    # Pools start one at a time, under a lock. A child forked while another thread held it
    # (starting a pool) found it held for good, and its first pool waited for ever.
    script = textwrap.dedent("""
        import os, time, bpe_cffi
        from bpe_cffi import pool
        docs = ["some text to count, over and over"] * 1000
        with pool._starting:  # as while another thread starts a pool
            pid = os.fork()
            if pid == 0:
                bpe_cffi.train_from_iterator(docs, 300, num_workers=2)
                os._exit(0)
        for _ in range(600):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("exit", status)
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            print("hung")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.stdout == "exit 0\n", run.stdout + run.stderr[-2000:]


def test_pool_results_are_small_enough_to_send_whole(tmp_path):
    """A worker that Pool.terminate kills part-way through sending a large result leaves half
    a message in the result pipe, and terminate then hangs for good (pool.py). So what the
    workers send back must fit one atomic pipe write (POSIX guarantees 512 bytes); the
    arrays go through spill files, which must hold the full result."""
    text = "the quick brown fox " * 50_000 + EOT + " jumps over the lazy dog " * 20_000
    path = write(tmp_path, text)
    size = os.path.getsize(path)
    for pattern in (bpe_cffi.GPT2_PATTERN, REGEX_GPT2):
        task = (str(path), 0, size, pattern, (EOT,))
        result = tally.count_group(([task], str(tmp_path / "counts")))
        assert len(pickle.dumps(result)) < 512
        blob, offsets, counts = counting.take_spilled_arrays(result[0], 3)
        assert arrays_to_counts((blob.tobytes(), offsets, counts)) == \
            bpe_cffi.count_words(path, [EOT], num_workers=1, pattern=pattern)
        assert not (tmp_path / "counts").exists()  # taken, then deleted

    vocab, merges = bpe_cffi.train_bpe(path, 280, [EOT])
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    encode_file._init_worker(bpe_cffi.Tokenizer(vocab, merges, [EOT]))
    result = encode_file._encode_job((str(path), "text", 0, size, "text", "all", [],
                                      str(tmp_path / "ids")))
    assert len(pickle.dumps(result)) < 512
    assert np.fromfile(result[0], "<u2").tolist() == tok.encode(text)
    assert result[1:] == (len(tok.encode(text)), 0, size)  # ids, documents, bytes


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_start_methods(tmp_path, method):
    text = "the quick brown fox " * 200_000 + EOT + " jumps over the lazy dog " * 100_000
    path = write(tmp_path, text)
    code = textwrap.dedent(f"""
        import multiprocessing, pickle, sys, bpe_cffi
        if __name__ == "__main__":
            multiprocessing.set_start_method({method!r})
            counts = bpe_cffi.count_words({str(path)!r}, ["{EOT}"], num_workers=2)
            sys.stdout.buffer.write(pickle.dumps(counts))
    """)
    script = tmp_path / "run.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert pickle.loads(proc.stdout) == bpe_cffi.count_words(path, [EOT], num_workers=1)


def test_worker_errors_of_types_that_take_more_than_a_message(tmp_path):
    # An error whose type cannot be made from a message alone (a UnicodeDecodeError) came
    # back as a RuntimeError, which the command line shows as a traceback. It comes back as
    # its nearest base class that can. A UnicodeEncodeError (a lone surrogate) comes back as
    # one, its text cut to the few hundred characters around the one that fails.

    @pool_job
    def encode(text):
        return text.encode("utf-8")

    @pool_job
    def decode(data):
        return data.decode("utf-8")

    with pytest.raises(UnicodeError, match="UnicodeDecodeError: 'utf-8' codec can't decode"):
        decode(b"a\xffb")
    with pytest.raises(UnicodeEncodeError) as caught:
        encode("a\ud800b")
    assert (caught.value.object, caught.value.start) == ("a\ud800b", 1)
    # ... also through tblib's pickler, which Dask installs (a plain UnicodeEncodeError
    # arrived empty through it)
    from tblib.pickling_support import pickle_exception
    rebuild, args = pickle_exception(caught.value)[:2]
    assert (rebuild(*args).object, rebuild(*args).start) == ("a\ud800b", 1)
    # A long text comes back cut to the characters around the one that fails, so that the
    # result stays under the pipe's atomic write size (see pool.py)
    import pickle
    from multiprocessing.pool import ExceptionWithTraceback
    for text in ("\U0001F600" * (1 << 20) + "\ud800" * 5000 + "\U0001F600" * 9,
                 "\ud800" + "x" * 500):
        with pytest.raises(UnicodeEncodeError) as caught:
            encode(text)
        e = caught.value
        assert e.object in text and e.object[e.start] == "\ud800" and len(e.object) <= 300
        sent = (1, 0, (False, ExceptionWithTraceback(e, e.__traceback__)))
        assert len(pickle.dumps(sent)) < 4096
    # Such a record is now found by its reader, which names it (tests/test_formats.py).
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "fine"}\n' * 3000 + '{"text": "a\\ud800b"}\n', encoding="utf-8")
    for workers in (1, 2):
        with pytest.raises(ValueError, match="d.jsonl:3001: .*lone surrogate"):
            bpe_cffi.count_words(path, num_workers=workers)


def test_json_lines_nested_too_deeply_and_closed_standard_input(tmp_path):
    from bpe_cffi.cli import main
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "fine"}\n' + "[" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"d.jsonl( \(a block of lines\))?:2: JSON nested too"):
        bpe_cffi.count_words(path)
    assert main(["train", str(path), "--vocab-size", "300", "--out", str(tmp_path / "t"),
                 "--quiet"]) == 1
    script = "import bpe_cffi; bpe_cffi.count_words('-')"
    proc = subprocess.run([sys.executable, "-c", script], stdin=subprocess.DEVNULL,
                          capture_output=True, close_fds=True,
                          preexec_fn=lambda: os.close(0))
    assert b"ValueError: standard input is closed" in proc.stderr, proc.stderr[-500:]


@pool_job
def _finish_slowly_or_fail(job):
    """A pool job for the test below: leaves a mark after half a second, or fails once the
    first job has started."""
    kind, mark = job
    if kind == "fail":
        while not os.path.exists(mark):
            time.sleep(0.01)
        raise ValueError("this job fails")
    if kind == "first":
        open(mark + "-started", "w").close()
    time.sleep(0.5)
    open(mark, "w").close()


def test_a_worker_error_lets_running_jobs_end_and_skips_the_rest(tmp_path):
    # Pool.terminate killed the workers on any error, and a worker killed while it held the
    # result queue's lock left the pool's task handler blocked for ever, and terminate with
    # it (a sanitizer run hung so). Now the jobs running end, and those not started return.
    marks = [str(tmp_path / str(k)) for k in range(20)]
    jobs = [("first", marks[0]), ("fail", marks[0] + "-started")] + \
        [("other", m) for m in marks[1:]]
    with pytest.raises(ValueError, match="this job fails"):
        with process_pool(2) as pool:
            for _ in pool.imap_unordered(_finish_slowly_or_fail, jobs):
                pass
    done = [m for m in marks if os.path.exists(m)]
    assert marks[0] in done  # it was running: not killed
    assert len(done) <= 3  # at most one more per worker started before the error arrived


def test_worker_errors_are_small_enough_to_send_whole(tmp_path):
    # A worker's exception travels with its formatted traceback; one longer than an atomic
    # pipe write can be cut by Pool.terminate (bpe_cffi/pool.py), so it leaves small.

    @pool_job
    def deep(n):
        if n:
            return deep.__wrapped__(n - 1)
        raise ValueError("x" * 10_000)

    with pytest.raises(ValueError) as caught:
        deep(200)
    assert len(str(caught.value)) == 1000
    assert len(pickle.dumps(caught.value)) < 2048  # also with tblib's pickling (Dask's)
    assert caught.value.__context__ is None


def test_a_client_that_is_no_dask_client_is_named(tmp_path):
    # An int or an address str failed deep inside with "'int' object has no attribute 'map'";
    # with an empty file the client was ignored.
    path = write(tmp_path, "hello world")
    empty = write(tmp_path, "", "empty.txt")
    for client in (5, "tcp://scheduler:8786"):
        for corpus in (path, empty):
            with pytest.raises(TypeError, match="client must be a dask.distributed.Client, "
                                                f"not {type(client).__name__}"):
                bpe_cffi.train_bpe(corpus, 300, [], client=client)
