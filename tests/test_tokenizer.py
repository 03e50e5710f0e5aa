"""Tokenizer: the spec's examples, reference / tiktoken / tokenizers agreement, streaming,
threads, batches, errors."""
from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc

import numpy as np
import pytest
import tokenizers
from hypothesis import HealthCheck, example, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import Tokenizer
from bpe_cffi.files import save_gpt2

import reference

EOT = "<|endoftext|>"
# GPT-2's pattern written so that no C scanner recognises it: the regex module splits it.
REGEX_GPT2 = "(?:" + bpe_cffi.GPT2_PATTERN + ")"
EDGE_CASES = [
    "", "a", " ", "  ", "\n", "hello world", "🙂", "👨‍👩‍👧‍👦 family", "🏳️‍🌈", "字字字 中文 漢字",
    "\t\r\n  \u00a0\u3000 x  ", "trailing spaces   ", "   leading", "it's we'll they've you're I'd",
    "'s'S 'LL", "12345 3.14159 1,000,000 ١٢٣", "a\u2028b\u0085c\u001cd", "x" * 1000,
    "ab" * 300, " " * 200 + "z", "\r\n\r\n", "naïve café Ωμέγα Привет", "<|endoftext", "|>",
]


@pytest.fixture(scope="module")
def trained():
    """A 3 000-token vocabulary trained on the packaged sample corpus."""
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 3000, [EOT])
    return vocab, merges


@pytest.fixture(scope="module")
def tok(trained):
    return Tokenizer(*trained, special_tokens=[EOT])


@pytest.fixture(scope="module")
def tiktoken_enc(trained):
    import tiktoken
    vocab, merges = trained
    ranks = {vocab[i]: i for i in range(256 + len(merges))}
    return tiktoken.Encoding("bpe_cffi_test", pat_str=bpe_cffi.GPT2_PATTERN,
                             mergeable_ranks=ranks, special_tokens={EOT: 256 + len(merges)})


# ---- the spec's examples ----------------------------------------------------------------------

def test_spec_worked_example():
    vocab = {0: b" ", 1: b"a", 2: b"c", 3: b"e", 4: b"h", 5: b"t", 6: b"th", 7: b" c", 8: b" a",
             9: b"the", 10: b" at"}
    merges = [(b"t", b"h"), (b" ", b"c"), (b" ", b"a"), (b"th", b"e"), (b" a", b"t")]
    tok = Tokenizer(vocab, merges)
    assert tok.encode("the cat ate") == [9, 7, 1, 5, 10, 3]
    assert tok.decode([9, 7, 1, 5, 10, 3]) == "the cat ate"


def test_overlapping_specials_longest_first(trained):
    double = EOT + EOT
    tok = Tokenizer(*trained, special_tokens=[EOT, double])
    ids = tok.encode(f"a{double}b{EOT}c")
    assert ids.count(tok.special_ids[double]) == 1
    assert ids.count(tok.special_ids[EOT]) == 1
    assert tok.special_ids[double] == len(trained[0])  # not in the vocab: a fresh id
    assert tok.decode(ids) == f"a{double}b{EOT}c"


def test_without_specials_the_marker_is_text(trained):
    tok = Tokenizer(*trained)
    ids = tok.encode(f"x{EOT}y")
    assert len(ids) > 3
    assert tok.decode(ids) == f"x{EOT}y"


def test_special_already_in_vocab_keeps_its_id(trained):
    vocab, merges = trained
    tok = Tokenizer(vocab, merges, special_tokens=["the"])
    assert tok.special_ids["the"] == tok.token_to_id[b"the"]


# ---- agreement with the reference and the oracles ------------------------------------------

@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_match_reference_and_tiktoken(tok, trained, tiktoken_enc, text):
    want = reference.encode(text, *trained, [EOT])
    assert tok.encode(text) == want
    assert tiktoken_enc.encode(text, allowed_special="all") == want
    assert tok.decode(tok.encode(text)) == text


unicode_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
mixed_text = st.lists(st.sampled_from(
    ["the", " the", " and", "  ", "\n", "\t", "\r\n", "\u00a0", "\u3000", "'s", "'ll", "12",
     "🙂", "字", "é", EOT, "<|", " LORD", "God", "x"]), max_size=60).map("".join)


@given(text=st.one_of(unicode_text, mixed_text))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_random_text_matches_tiktoken_and_round_trips(tok, tiktoken_enc, text):
    ids = tok.encode(text)
    assert ids == tiktoken_enc.encode(text, allowed_special="all")
    assert tok.decode(ids) == text


@given(text=mixed_text)
@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
def test_random_text_matches_reference(tok, trained, text):
    assert tok.encode(text) == reference.encode(text, *trained, [EOT])


def test_real_text_matches_tiktoken(tok, tiktoken_enc, real_text):
    assert tok.encode(real_text) == tiktoken_enc.encode(real_text, allowed_special="all")


def test_matches_hf_tokenizers(trained, tmp_path):
    import tokenizers
    vocab, merges = trained
    vocab = {i: b for i, b in vocab.items() if b != EOT.encode()}
    save_gpt2(vocab, merges, str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    hf = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(
        str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    ours = Tokenizer(vocab, merges)
    for text in EDGE_CASES + [open(bpe_cffi.sample_path(), encoding="utf-8").read()[:50_000]]:
        assert ours.encode(text) == hf.encode(text).ids, text


def test_long_pretoken_uses_heap_path(tok, trained):
    # Pre-tokens over 128 bytes take the heap path in C: compare with the reference.
    for text in ["a" * 1500, "ab" * 700, "the" * 500, "字" * 300, "x" * 129, "ab" * 65]:
        assert tok.encode(text) == reference.encode(text, *trained, [EOT])


def test_pretokens_up_to_the_short_path_limit(tok, trained):
    # Up to 128 bytes a pre-token is merged in a fixed array whose moves read a few items past
    # the word (csrc/encoder.c, shift_down): every length up to the limit and one past it.
    for n in range(1, 131):
        for word in [("thereafter" * 13)[:n], ("й" * 65).encode()[:n].decode(errors="ignore")]:
            assert tok.encode(word) == reference.encode(word, *trained, [EOT]), n


# ---- numpy, files, iterables --------------------------------------------------------------

@given(parts=st.lists(st.sampled_from(["a", " b", "cd ", "\n", "é", "字", "🙂", "'s", "  ",
                                        EOT, "<|endof", "text|>"]), max_size=500))
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_list_and_array_agree(tok, parts):
    text = "".join(parts)
    want = tok.encode_to_numpy(text).tolist()
    assert tok.encode(text) == want
    assert tok.encode(text * 3) == tok.encode_to_numpy(text * 3).tolist()


@given(text=st.one_of(mixed_text, unicode_text))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])
def test_short_and_long_inputs_agree(tok, real_text, text):
    # A short input has each pre-token encoded where it occurs; from 64 KB on, the C encoder
    # finds the distinct units first (csrc/encode.c). The same text, alone and in a batch with
    # a long one, takes each way.
    assert tok.encode_batch([text, real_text[:70_000]])[0] == tok.encode(text)


def test_encode_to_numpy(tok):
    arr = tok.encode_to_numpy("In the beginning God created")
    assert arr.dtype == np.uint16
    assert arr.tolist() == tok.encode("In the beginning God created")
    big = Tokenizer({i: bytes([i]) for i in range(256)} | {70_000: b"zz"}, [(b"z", b"z")])
    assert big.encode_to_numpy("zz").dtype == np.uint32


@pytest.mark.parametrize("top_id", [70_000, 1 << 20])
@pytest.mark.parametrize("repeat", [300, 20_000])  # 1 200 ids; 80 000, made of shared ints
def test_long_encode_list_equals_the_array(top_id, repeat):
    tok = Tokenizer({i: bytes([i]) for i in range(256)} | {top_id: b"zz"}, [(b"z", b"z")])
    text = "zz a " * repeat
    ids = tok.encode(text)
    assert ids == tok.encode_to_numpy(text).tolist() == [top_id, 32, 97, 32] * repeat
    assert all(type(i) is int for i in ids)
    batch = tok.encode_batch([text, "a zz", text])
    assert batch == [ids, [97, 32, top_id], ids] and all(type(i) is int for i in batch[1])


@given(text=mixed_text, cuts=st.lists(st.integers(0, 1 << 18), max_size=12))
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])
def test_encode_iterable_equals_encode(tok, text, cuts):
    # Long enough (over 64 K characters) for encode_iterable to encode in several batches.
    text = (text + "\n") * (200_000 // (len(text) + 1) + 1)
    cuts = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    assert list(tok.encode_iterable(chunks)) == tok.encode(text)


def test_encode_iterable_over_file_lines(tok, tmp_path):
    # Lines ending in whitespace: "\n" and trailing spaces belong with the next line's start.
    text = "".join(f"line {i} ends with spaces   \n  indented{EOT}\n\n\tx \u3000\n"
                   for i in range(6000))
    path = tmp_path / "lines.txt"
    path.write_text(text, encoding="utf-8", newline="")
    with open(path, encoding="utf-8", newline="") as f:
        assert list(tok.encode_iterable(f)) == tok.encode(text)
    for size in (1, 7, 4096):  # chunks that cut anywhere, the special tokens too
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        assert list(tok.encode_iterable(chunks)) == tok.encode(text), size


@pytest.mark.slow
def test_encode_iterable_memory_is_bounded(tok, tmp_path):
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    path = tmp_path / "big.txt"
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(8_000_000 // len(sample.encode()) + 1):
            f.write(sample)
    tracemalloc.start()
    n = 0
    with open(path, encoding="utf-8") as f:
        for _ in tok.encode_iterable(f):
            n += 1
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n > 1_500_000
    assert peak < 4 * 2**20, f"peak traced memory {peak / 2**20:.1f} MB"  # the text is 8 MB


def _iterable_work(tokenizer, chunks) -> int:
    """Characters encode_iterable hands to the edge search (joined texts, blocks searched):
    a measure of its work that does not depend on the machine's speed."""
    from bpe_cffi import chunking
    work = 0
    last_edge, safe_in = chunking.Edges.last_edge, chunking.Edges.safe_in

    def counted_last_edge(self, text, start=0):
        nonlocal work
        work += len(text)
        return last_edge(self, text, start)

    def counted_safe_in(self, text, lo, hi, last=False):
        nonlocal work
        work += hi - lo
        return safe_in(self, text, lo, hi, last)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chunking.Edges, "last_edge", counted_last_edge)
        mp.setattr(chunking.Edges, "safe_in", counted_safe_in)
        for _ in tokenizer.encode_iterable(chunks):
            pass
    return work


@pytest.mark.parametrize("case", ["custom pattern by lines", "no whitespace in 4 KB chunks",
                                  "long special by lines", "one character at a time"])
def test_encode_iterable_work_is_linear(trained, case):
    # Texts that offer few safe edges (no special token in them) once made encode_iterable
    # search (and join) the whole text again for every chunk: 4x the input cost 7x the time.
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read().replace(EOT, "") * 8
    specials, pattern = [EOT], bpe_cffi.GPT2_PATTERN
    if case == "custom pattern by lines":
        pattern = r"\w+|[^\w\s]+|\s+"
    elif case == "long special by lines":
        specials = [EOT, "Z" * 100_000]
    tokenizer = Tokenizer(*trained, special_tokens=specials, pattern=pattern)
    work = []
    for size in (500_000, 2_000_000):
        if case == "no whitespace in 4 KB chunks":
            text = sample.replace(" ", "").replace("\n", "")[:size]
            chunks = [text[i:i + 4096] for i in range(0, size, 4096)]
        elif case == "one character at a time":
            text = sample[:size]
            chunks = list(text)
        else:
            text = sample[:size]
            chunks = text.splitlines(keepends=True)
        assert len(text) == size  # (the sample, eight times over, is long enough)
        work.append(_iterable_work(tokenizer, chunks))
        assert work[-1] <= 8 * size, (case, size, work[-1])
    assert work[1] <= 6 * work[0], (case, work)


@pytest.mark.parametrize("family", ["gpt2", "cl100k", "o200k"])
@given(text=st.text(alphabet="ab1 ,/\t\n\r\x0b\x0c\u3000é字", max_size=60), data=st.data())
@settings(max_examples=200)
def test_edges_in_a_block_are_those_of_the_whole_text(family, text, data):
    # The block search reads just past the block (the character it ends in), skips a block
    # without both ASCII whitespace and something else, and stops at the first safe edge: it must find what the edge regex finds
    # over the whole text, with the starts of special tokens, less the edges inside one.
    from bpe_cffi.chunking import Edges
    from bpe_cffi.patterns import pretokenizer
    specials = data.draw(st.lists(st.sampled_from(["a\t", " ,", "b\nb", "1 1", "é ", "aa",
                                                   "abab", "aba"]),
                                  max_size=2, unique=True))
    for kind, whole in ((bytes, text.encode()), (str, text)):  # files and streams
        edges = Edges([s.encode() for s in specials],
                      pretokenizer(bpe_cffi.PATTERNS[family]).edges, kind)
        lo = data.draw(st.integers(0, len(whole)))
        hi = data.draw(st.integers(lo, len(whole)))
        spans = [(i, i + len(s)) for s in edges.specials for i in range(len(whole))
                 if whole.startswith(s, i)]
        found = {m.start() for m in edges.finder.finditer(whole)} | {a for a, _ in spans}
        found = sorted(i for i in found if lo <= i < hi and i > 0
                       and not any(a < i < b for a, b in spans))
        assert edges.safe_in(whole, lo, hi) == (found[0] if found else -1)
        assert edges.safe_in(whole, lo, hi, last=True) == (found[-1] if found else -1)


@pytest.mark.parametrize("family", ["gpt2", "cl100k", "o200k"])
@given(text=st.text(alphabet="a1 ,/\t\n\r\u3000\u2028\u0085\u00a0é字ど。", max_size=40))
@settings(max_examples=200)
def test_file_edges_read_whole_characters_around_the_block(family, text):
    # In a file, an edge is searched in blocks read from just before it: whether a character
    # outside ASCII beside a line break or a space is whitespace (U+3000, U+2028) takes its
    # whole UTF-8, up to 3 bytes on either side of the edge, at both ends of every block.
    import io
    from bpe_cffi import chunking
    from bpe_cffi.patterns import pretokenizer
    data = text.encode()
    edges = chunking.Edges([], pretokenizer(bpe_cffi.PATTERNS[family]).edges)
    whole = [m.start() for m in edges.finder.finditer(data) if m.start() > 0]
    first_block = chunking._FIRST_BLOCK
    try:
        for block in (1, 2, 3, 5, first_block):
            chunking._FIRST_BLOCK = block
            for pos in range(len(data) + 1):
                want = next((i for i in whole if i >= pos), -1)
                assert edges.next_edge(io.BytesIO(data), pos, len(data)) == want, (block, pos)
    finally:
        chunking._FIRST_BLOCK = first_block


@given(s=st.text(alphabet="ab", min_size=1, max_size=8),
       text=st.text(alphabet="ab", max_size=80), data=st.data())
@settings(max_examples=300)
def test_runs_of_overlapping_specials_are_found_whole(s, text, data):
    # A special token that overlaps itself ("==" in a run of "=") has an occurrence at
    # every step of a run: checking each edge against each occurrence took 30 s for 64 KB,
    # and finding "x" * 1000 at each of 3 M places in a run of "x" compared 3 G characters.
    # Runs are one span each, measured by comparing slices; the union must be the same.
    from bpe_cffi.chunking import _occurrences, _period
    p = next(d for d in range(1, len(s) + 1)
             if all(s[i] == s[i + d] for i in range(len(s) - d)))
    assert _period(s) == p
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    each = [(i, i + len(s)) for i in range(start, end - len(s) + 1) if text.startswith(s, i)]
    spans = _occurrences(text, s, p, start, end)
    inside = lambda spans: {i for a, b in spans for i in range(a + 1, b)}  # noqa: E731
    assert inside(spans) == inside(each)
    assert {a for a, _ in spans} == {a for a, _ in each if not any(c < a < d for c, d in each)}
    assert len(_occurrences("x" * 1_000_000, "x" * 1000, 1, 0, 1_000_000)) == 1


class _SearchCounter:
    """Counts the characters an Edges' searches for family edges cover: its regex's, and on
    bytes its C search's (csrc/edges.c)."""

    def __init__(self, edges):
        self.finder, self.searched = edges.finder, 0
        family_edge = edges._family_edge

        def counted(text, lo, hi, last):
            if edges.c_family is not None:  # (the regex's searches count themselves)
                self.searched += max(0, min(len(text), hi + edges.reach - 1) - lo)
            return family_edge(text, lo, hi, last)
        edges.finder, edges._family_edge = self, counted

    def finditer(self, text, pos=0, endpos=None):
        endpos = len(text) if endpos is None else endpos
        self.searched += endpos - pos
        return self.finder.finditer(text, pos, endpos)


@pytest.mark.parametrize("kind", [bytes, str])  # C's search (files), the regex's (streams)
@pytest.mark.parametrize("family, fill, edge", [("gpt2", " ", -1), ("o200k", "/\n", 0)])
def test_edge_search_reads_each_block_once(family, fill, edge, kind):
    # A long text without an edge: the family's edge regex once searched from each block to
    # the end of the text, so cutting 50 MB of one letter for threads took minutes. (In
    # o200k's "/\n/\n...", punctuation takes the line break after it, and a / after a line
    # break goes with it: the only edge is before the "x" after them. Its blocks hold
    # whitespace and more, so the search does not pass them over, as it does blocks of "a".)
    from bpe_cffi.chunking import Edges
    from bpe_cffi.patterns import pretokenizer
    as_kind = (lambda t: t.encode()) if kind is bytes else (lambda t: t)
    edges = Edges([], pretokenizer(bpe_cffi.PATTERNS[family]).edges, kind)
    finder = _SearchCounter(edges)
    text = as_kind(fill * (2_000_000 // len(fill)))
    end = len(text) if edge == 0 else edge
    assert edges.first_edge(text + as_kind("x"), 1, len(text) + 1) == end
    assert edges.first_edge(text + as_kind("x \n"), 1, len(text) + 1) == end
    assert edges.last_edge(text) == 0  # back from the end, as encode_iterable searches
    assert 0 < finder.searched <= 4 * len(text), finder.searched  # three searches, each once


def test_first_edge_search_stops_at_the_first_edge():
    # Cutting a long text for threads wants the first edge past each cut: the search once
    # found every edge of a 4 KB block (3 ms for a 9 MB text's three cuts).
    from bpe_cffi.chunking import Edges
    from bpe_cffi.patterns import pretokenizer
    edges, taken = Edges([], pretokenizer(bpe_cffi.GPT2_PATTERN).edges), 0
    finder = edges.finder

    class CountingFinder:
        def finditer(self, text, pos=0, endpos=None):
            nonlocal taken
            for m in finder.finditer(text, pos, endpos):
                taken += 1
                yield m

    edges.finder = CountingFinder()
    text = b"a b " * 100_000
    assert [a for a, _ in edges.plan_text(text, 4)] == [0, 100_001, 200_001, 300_001]
    assert taken == 0  # on bytes, C finds the first edge (csrc/edges.c); the regex's search:
    edges.c_family = None
    assert [a for a, _ in edges.plan_text(text, 4)] == [0, 100_001, 200_001, 300_001]
    assert taken == 3
    # the search goes on past an edge inside a special token
    inside = Edges([b"ya\t"], pretokenizer(bpe_cffi.GPT2_PATTERN).edges)
    assert inside.safe_in(b"ya\tb c", 0, 6) == 4


@pytest.mark.parametrize("kind", [bytes, str])
def test_edge_search_passes_runs_of_overlapping_specials_at_once(monkeypatch, kind):
    # A special token that overlaps itself ("x x" in " x x x ...") straddles every family edge
    # of such text: the search took a step for each edge it then turned down (8 MB: 3.6 s to
    # count, 60 times the text without it), and now passes each run of occurrences at once.
    from bpe_cffi import chunking
    from bpe_cffi.patterns import pretokenizer
    edges = chunking.Edges([b"x x"], pretokenizer(bpe_cffi.GPT2_PATTERN).edges, kind)
    steps = 0
    finder, c_lib = edges.finder, chunking.lib

    class Counting:  # the regex's edges taken, and C's searches (csrc/edges.c)
        def finditer(self, text, pos=0, endpos=None):
            nonlocal steps
            for m in finder.finditer(text, pos, endpos):
                steps += 1
                yield m

        def bpe_next_edge(self, *args):
            nonlocal steps
            steps += 1
            return c_lib.bpe_next_edge(*args)

        def __getattr__(self, name):
            return getattr(c_lib, name)

    edges.finder = Counting()
    monkeypatch.setattr(chunking, "lib", Counting())
    text = "y z" + " x" * 50_000  # a run of "x x" from 4 to the end
    text = text.encode() if kind is bytes else text
    assert edges.first_edge(text, 1, len(text)) == 1
    assert edges.first_edge(text, 2, len(text)) == 3
    assert edges.first_edge(text, 4, len(text)) == 4  # the run's first occurrence
    assert edges.first_edge(text, 5, len(text)) == -1
    assert edges.last_edge(text) == 4
    assert steps < 100, steps


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_file(tok, tmp_path, workers):
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    text = (sample + "\n") * 8  # ~3 MB: several chunks
    src = tmp_path / "in.txt"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "ids.npy"
    n = tok.encode_file(src, out, num_workers=workers)
    arr = np.load(out)
    assert arr.dtype == np.uint16 and len(arr) == n
    assert arr.tolist() == tok.encode(text)


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_file_names_the_file_and_offset_of_a_byte_without_a_token(tmp_path, workers):
    tok = Tokenizer({0: b" ", 1: b"a", 2: b"c", 3: b"e", 4: b"h", 5: b"t", 6: b"th"},
                    [(b"t", b"h")], [EOT])
    plain = tmp_path / "plain.txt"
    plain.write_text("the cat" + EOT + "the dog", encoding="utf-8")
    with pytest.raises(ValueError, match=r"plain.txt: byte offset 24: the text holds byte\(s\) "
                                         "0x64, 0x67, 0x6f which have no token"):
        tok.encode_file(plain, tmp_path / "ids.npy", num_workers=workers)
    records = tmp_path / "docs.jsonl"
    records.write_text('{"text": "the cat"}\n{"text": "a dog"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"docs.jsonl: the text holds byte\(s\) 0x64, 0x67"):
        tok.encode_file(records, tmp_path / "ids.npy", num_workers=workers)


def test_encode_file_of_plain_files_on_threads(tok, tmp_path, monkeypatch):
    # Plain files with a C scanner's pattern are encoded on threads of this process, which
    # share the tokenizer's cache: in ranges, the separator between every two files, in
    # order; no process is started.
    from bpe_cffi import encode_file

    def no_processes(*args):
        raise AssertionError("a process pool was started")
    monkeypatch.setattr(encode_file, "process_pool", no_processes)
    monkeypatch.setattr(encode_file, "chunk_target", lambda size, workers: 40_000)
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    texts = [sample[:150_000], sample[200_000:241_000], sample[-120_000:], sample[7:90_007]]
    paths = []
    for k, text in enumerate(texts):
        paths.append(tmp_path / f"{k}.txt")
        paths[-1].write_text(text, encoding="utf-8")
    out = tmp_path / "ids.npy"
    n = tok.encode_file(paths, out, num_workers=3)
    want = tok.encode(EOT.join(texts))
    assert np.load(out).tolist() == want and n == len(want)
    # An error on a thread (bytes that are no UTF-8 in a later range) names its place, leaves
    # no output and no thread behind.
    before = threading.active_count()
    paths[2].write_bytes(paths[2].read_bytes()[:100_000] + b"\xff" + b" a" * 10_000)
    with pytest.raises(ValueError, match=r"2.txt is not valid UTF-8: byte offset 100000 "):
        tok.encode_file(paths, tmp_path / "bad.npy", num_workers=2)
    assert not (tmp_path / "bad.npy").exists() and threading.active_count() == before
    # Nor an error in writing the output (a full disk), which the threads' results never see:
    # their jobs went on, and the threads lived as long as the error's traceback.
    written, real_write = [], encode_file._IdsFile.write

    def full_disk(self, ids):
        written.append(len(ids))
        if len(written) > 2:
            raise OSError(28, "No space left on device")
        real_write(self, ids)
    monkeypatch.setattr(encode_file._IdsFile, "write", full_disk)
    paths[2].write_text(texts[2], encoding="utf-8")
    with pytest.raises(OSError, match="No space left") as caught:
        tok.encode_file(paths, tmp_path / "full.npy", num_workers=2)
    assert caught.tb is not None  # (the traceback, alive: it held the unclosed generator)
    assert not (tmp_path / "full.npy").exists() and threading.active_count() == before


def test_threads_leaving_early_cancel_the_rest(tok, tmp_path):
    # encode_file's threads: a caller that stops taking results (an error in writing, Ctrl-C)
    # leaves no job running once it has left, and starts none after.
    from bpe_cffi import encode_file
    src = tmp_path / "in.txt"
    src.write_text("In the beginning God created the heaven and the earth. " * 2000)
    jobs = [(str(src), "text", 0, 100_000, "text", "all", [], "")] * 50
    started = []
    real = encode_file._encode_plain
    encode_file._encode_plain = lambda *args: started.append(1) or real(*args)
    try:
        results = encode_file._on_threads(tok, jobs, 2, "all")
        ids, n, docs, done = next(results)
        assert ids.tolist() == tok.encode(src.read_text()[:100_000])
        time.sleep(0.3)  # taking no result meanwhile: the ids waiting stay bounded
        assert len(started) <= 1 + 2 * 2  # the first, and two jobs a thread ahead
        results.close()
        now = len(started)
        time.sleep(0.2)
        assert len(started) == now
    finally:
        encode_file._encode_plain = real


def test_from_files_round_trip(trained, tmp_path):
    vocab, merges = trained
    save_gpt2(vocab, merges, str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    loaded = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", [EOT])
    assert loaded.id_to_token == vocab
    assert loaded.merges == merges
    text = "In the beginning<|endoftext|> God"
    assert loaded.encode(text) == Tokenizer(vocab, merges, [EOT]).encode(text)


def test_inspection(tok, trained):
    assert len(tok) == len(trained[0]) == tok.vocab_size
    assert tok.id_to_token[300] == trained[0][300]
    assert tok.token_to_id[trained[0][300]] == 300


def test_concurrent_threads_agree(tok, real_text):
    text = real_text
    want = tok.encode(text)
    lines = text.splitlines(keepends=True)
    want_lines = [tok.encode(t) for t in lines]
    results = [None] * 8

    def work(k):  # half encode the text, half its lines as a batch, all at once
        results[k] = tok.encode(text) if k % 2 else tok.encode_batch(lines)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == (want if k % 2 else want_lines) for k, r in enumerate(results))


def test_first_calls_at_once_share_the_tokenizers_threads(trained, monkeypatch):
    # Eight threads' first long calls each made an executor of their own, and ran on its
    # threads (the executor made slowly here, so that all eight are making one at once).
    import concurrent.futures
    import time
    from bpe_cffi import encoder

    used = set()

    class SlowToMake(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, *args, **kwargs):
            time.sleep(0.05)
            super().__init__(*args, **kwargs)

        def submit(self, *args, **kwargs):
            used.add(self)
            return super().submit(*args, **kwargs)

    text = "In the beginning God created the heaven and the earth. " * 80_000  # 4.6 MB
    want = Tokenizer(*trained, [EOT], num_threads=1).encode_to_numpy(text).tolist()
    monkeypatch.setattr(encoder, "ThreadPoolExecutor", SlowToMake)
    tok = Tokenizer(*trained, [EOT], num_threads=2)
    results = [None] * 8

    def work(k):
        results[k] = tok.encode_to_numpy(text).tolist()

    callers = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert all(r == want for r in results)
    assert len(used) == 1


# ---- bad input -----------------------------------------------------------------------------

def test_decode_unknown_id(tok):
    with pytest.raises(ValueError, match=r"id 99999 is not in the vocabulary \(at index 2 "):
        tok.decode([1, 2, 99999])
    with pytest.raises(ValueError, match="at index 0 "):
        tok.decode([-1])
    with pytest.raises(ValueError, match=r"id -1 .*at index 70 "):  # (in C, from 64 ids on)
        tok.decode(np.array([1] * 70 + [-1] + [1] * 9))


def test_decode_takes_any_iterable(tok):
    ids = tok.encode("In the beginning")
    assert tok.decode(iter(ids)) == tok.decode(np.array(ids)) == "In the beginning"
    with pytest.raises(ValueError, match="99999"):
        tok.decode(i for i in [1, 99999])
    for text_bytes in (b"hi", bytearray(b"hi"), memoryview(b"hi")):  # ints, but not ids
        with pytest.raises(TypeError, match="not ids"):
            tok.decode(text_bytes)
        with pytest.raises(TypeError, match="not ids"):
            tok.decode_bytes(text_bytes)


def join_decode(tok, ids) -> str:
    return b"".join(tok.id_to_token[int(i)] for i in ids).decode("utf-8", errors="replace")


@given(picks=st.lists(st.integers(0, 10**6), max_size=300))
@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_decode_equals_joining_the_tokens(tok, picks):
    # Short lists are joined in Python, long ones (64 ids on) copied in C: both lengths here.
    known = sorted(tok.id_to_token)
    ids = [known[p % len(known)] for p in picks]  # every token, the special one included
    want = join_decode(tok, ids)
    assert tok.decode(ids) == tok.decode(iter(ids)) == want
    for dtype in (np.uint16, np.int32, np.uint64, np.int64):
        assert tok.decode(np.array(ids, dtype)) == want
    want_bytes = b"".join(tok.id_to_token[i] for i in ids)
    assert tok.decode_bytes(ids) == tok.decode_bytes(np.array(ids, np.int32)) == want_bytes
    assert type(tok.decode_bytes(ids * 2)) is bytes  # (C's bytearray, as bytes)


@given(picks=st.lists(st.integers(0, 10**6), min_size=64, max_size=400),
       room=st.integers(0, 40))
@settings(max_examples=100)
def test_decode_of_tokens_of_every_length_equals_joining_them(picks, room):
    # C copies a token of up to 16 bytes as 16 bytes where they fit (the next token writes
    # over what lies past it), and a longer one, or one near the end of the output, exactly.
    lengths = [2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 100]
    vocab = {i: bytes([i]) for i in range(256)} | \
        {256 + k: (b"%02d" % k + b"abcdefghijklmnopqrstuvwxyz" * 4)[:n]
         for k, n in enumerate(lengths)}
    assert sorted(map(len, vocab.values()))[256:] == lengths
    tok = Tokenizer(vocab, [])
    ids = [256 + p % len(lengths) if p % 3 else p % 256 for p in picks]
    want = b"".join(vocab[i] for i in ids)
    assert tok.decode_bytes(ids) == tok.decode_bytes(np.array(ids, np.int64)) == want
    from bpe_cffi._lib import ffi, lib  # the output buffer larger than the bytes: cap > n_out
    table = tok._decoder._c_table()
    out, n_out = ffi.new("uint8_t[]", len(want) + room), ffi.new("int64_t *")
    assert lib.bpe_decoder_decode(table, ffi.new("int64_t[]", ids), len(ids), out,
                                  len(want) + room, n_out) == lib.BPE_OK
    assert ffi.buffer(out, n_out[0])[:] == want


@pytest.mark.parametrize("repeat", [1, 10])  # a short list of ids (joined) and a long one (C)
def test_decode_errors_on_both_ways(tok, repeat):
    some = tok.encode("In the beginning God created the heaven and the earth.") * repeat
    for bad in (99999, -1, 2**70, tok.vocab_size):
        with pytest.raises(ValueError, match=re.escape(repr(bad))):
            tok.decode(some + [bad] + some)
    for bad in (1.5, float(some[0]), "7", None):  # no ids at all: as tiktoken has it
        with pytest.raises(TypeError, match=re.escape(f"an id is an int, not "
                                                      f"{type(bad).__name__} ({bad!r})")):
            tok.decode(some + [bad] + some)
    with pytest.raises(TypeError, match="an id is an int, not float"):
        tok.decode(np.array(some, np.float64))
    with pytest.raises(ValueError, match="id 99999 is"):  # not the numpy ints before it
        tok.decode([np.uint16(i) for i in some] + [99999])
    for bad in (np.array(some + [2**64 - 1], np.uint64), np.array(some + [-3], np.int64)):
        with pytest.raises(ValueError, match=str(int(bad[len(some)]))):
            tok.decode(bad)
    assert tok.decode([True, 1]) == join_decode(tok, [1, 1])  # as the dict lookup has it


def test_decode_takes_strided_arrays(tok):
    ids = np.array(tok.encode("In the beginning God created the heaven and the earth. " * 20))
    assert len(ids[::2]) >= 64  # decoded in C, as the reversed view and the column
    for view in (ids[::2], ids[::-1], np.stack([ids, ids], axis=1)[:, 0]):
        for dtype in (np.int64, np.int32):
            assert tok.decode(view.astype(dtype, copy=False)) == join_decode(tok, view)


def test_decode_with_scattered_ids():
    # Ids far beyond the number of tokens: decode joins in Python (no table indexed by id).
    vocab = {i: bytes([i]) for i in range(256)} | {2**31 - 5: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b")])
    ids = [2**31 - 5, 32] * 100
    assert tok.decode(ids) == "ab " * 100
    assert tok.decode(np.array(ids, np.int64)) == "ab " * 100


def test_encode_lists_with_scattered_ids():
    # A long list took its items from an object array of every int up to the largest id: 4.7
    # GB for one list with an id near 10**8. Scattered ids make their ints one by one.
    vocab = {i: bytes([i]) for i in range(256)} | {2**31 - 5: b"ab"}
    tok = Tokenizer(vocab, [(b"a", b"b")])
    tracemalloc.start()
    try:
        ids = tok.encode("ab " * 40_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ids == [2**31 - 5, 32] * 40_000
    assert tok.encode_batch(["ab " * 40_000]) == [ids]
    assert peak < 64 << 20, peak


def test_empty_vocabulary():
    tok = Tokenizer({}, [])
    assert tok.encode("") == [] and len(tok) == 0
    with pytest.raises(ValueError, match="no token"):
        tok.encode("a")


def test_decode_malformed_bytes_gives_replacement(tok):
    assert tok.decode([0xE2, 0x82]) == "\ufffd"  # a cut-off 3-byte sequence
    assert tok.decode([0xFF, ord("a")]) == "\ufffda"


def test_merge_with_unknown_token_fails_at_construction():
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(ValueError, match="merge 0"):
        Tokenizer(vocab, [(b"a", b"b")])  # b"ab" is not in the vocab
    with pytest.raises(ValueError, match="merge 1"):
        Tokenizer(vocab | {256: b"ab"}, [(b"a", b"b"), (b"ab", b"zzz")])


def test_encode_type_errors(tok):
    with pytest.raises(TypeError):
        tok.encode(b"bytes")
    with pytest.raises(TypeError):
        tok.encode(None)
    with pytest.raises(TypeError):
        list(tok.encode_iterable([b"x"]))


def test_lone_surrogate(tok):
    with pytest.raises(UnicodeEncodeError):
        tok.encode("abc \ud800 def")


def test_a_lone_surrogate_in_a_stream_is_placed_in_the_stream(tok):
    # encode_iterable encodes the stream in pieces cut at safe edges: its error's object is
    # a piece, and its message says where the character lies in the whole stream.
    items = ["word " * 20_000, "more words ", "and \ud800 here"]
    with pytest.raises(UnicodeEncodeError, match="character 100015 of the stream") as caught:
        list(tok.encode_iterable(items))
    assert caught.value.object[caught.value.start] == "\ud800"
    assert "".join(items)[100015] == "\ud800"


def test_vocab_type_errors():
    with pytest.raises(TypeError):
        Tokenizer({0: "a"}, [])
    with pytest.raises(TypeError):
        Tokenizer([b"a"], [])
    with pytest.raises(TypeError, match="got '0'"):
        Tokenizer({"0": b"a"}, [])
    for outside in (-1, 2**31):  # an int of the wrong value, not of the wrong type
        with pytest.raises(ValueError, match=re.escape(f"in [0, 2**31), got {outside}")):
            Tokenizer({outside: b"a"}, [])


def test_special_tokens_with_their_ids_as_tiktoken_gives_them(tmp_path):
    # OpenAI's encodings leave gaps before some specials (cl100k_base: ranks end at 100255,
    # <|endoftext|> is 100257): a rank file loaded with tiktoken's {special: id} keeps them.
    import base64
    import tiktoken
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"abc"}
    with open(tmp_path / "tokenizer.tiktoken", "wb") as f:
        f.writelines(base64.b64encode(b) + b" %d\n" % i for i, b in vocab.items())
    specials = {EOT: 259, "<|fim|>": 270}
    pattern = bpe_cffi.PATTERNS["cl100k_tiktoken"]
    tt = tiktoken.Encoding("gaps", pat_str=pattern, special_tokens=specials,
                           mergeable_ranks={b: i for i, b in vocab.items()})
    text = f"abc{EOT}ab x<|fim|>abcabc {EOT}"
    tok = Tokenizer.load(tmp_path, pattern="cl100k_tiktoken", special_tokens=specials)
    assert tok.encode(text) == tt.encode(text, allowed_special="all")
    assert tok.special_ids == specials and tok.decode(tok.encode(text)) == text
    out = tmp_path / "saved"
    tok.save(out)
    assert Tokenizer.load(out).encode(text) == tt.encode(text, allowed_special="all")
    hf = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    assert hf.encode(text).ids == tt.encode(text, allowed_special="all")


@pytest.mark.parametrize("specials", [{"hi": 257}, {EOT: 257, "hi": 256},
                                      {"hi": 300, " world": 301}])
def test_a_special_that_is_no_rank_is_never_an_ordinary_token(specials):
    # With a gap before the specials, or their ids not in their order, a special whose text is
    # a whole pre-token was looked up as a token of the ranks when the call did not allow it:
    # "hi" gave [257] where tiktoken's encode_ordinary gives [104, 105]. Pickled (for process
    # pools) it must stay so.
    import pickle
    import tiktoken
    vocab = {i: bytes([i]) for i in range(256)}
    tt = tiktoken.Encoding("gaps", pat_str=bpe_cffi.PATTERNS["gpt2"], special_tokens=specials,
                           mergeable_ranks={b: i for i, b in vocab.items()})
    tok = Tokenizer(vocab, [], specials, ignore_merges=True)
    text = "hi, hi world" + "".join(specials) + " world"
    for t in (tok, pickle.loads(pickle.dumps(tok))):
        assert t.encode(text, allowed_special=set()) == tt.encode_ordinary(text)
        assert t.encode(text) == tt.encode(text, allowed_special="all")
        for s in specials:
            allowed = set(specials) - {s}
            assert t.encode(text, allowed_special=allowed) == tt.encode(
                text, allowed_special=allowed, disallowed_special=())
        assert t.special_ids == specials
    listed = Tokenizer({i: t for i, t in vocab.items() if i != 98}, [], list(specials),
                       ignore_merges=True)  # a vocabulary with a hole, the specials listed
    assert listed.encode("hi", allowed_special=set()) == [104, 105]


def test_special_tokens_with_ids_that_clash_are_refused():
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    merges = [(b"a", b"b")]
    with pytest.raises(ValueError, match="cannot have id 256: that is the id of the token"):
        Tokenizer(vocab, merges, {EOT: 256})
    with pytest.raises(ValueError, match="its bytes are the token of id 256"):
        Tokenizer(vocab, merges, {"ab": 300})
    with pytest.raises(ValueError, match="cannot have id 300"):
        Tokenizer(vocab, merges, {"<a>": 300, "<b>": 300})
    with pytest.raises(TypeError, match="must be an int"):
        Tokenizer(vocab, merges, {EOT: 300.0})
    with pytest.raises(ValueError, match=re.escape("must be in [0, 2**31)")):
        Tokenizer(vocab, merges, {EOT: 2**31})
    assert Tokenizer(vocab, merges, {"ab": 256}).special_ids == {"ab": 256}


def test_overlapping_pair_merges_leftmost_first():
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"aa", 257: b"  "}
    tok = Tokenizer(vocab, [(b"a", b"a"), (b" ", b" ")])
    assert tok.encode("aaa") == [256, 97]
    assert tok.encode("aaaaa") == [256, 256, 97]
    assert tok.encode("a" * 301) == [256] * 150 + [97]  # heap path (> 128 bytes)
    assert tok.encode("   x") == [257, 32, 120]


@given(corpus=st.text(alphabet="ab \n", min_size=1, max_size=300),
       text=st.text(alphabet="ab \nc", max_size=300))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
def test_small_alphabet_vocab_matches_reference(corpus, text):
    counts = reference.word_counts(corpus)
    merges = reference.train(counts, 40)
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in merges:
        vocab[len(vocab)] = a + b
    tok = Tokenizer(vocab, merges)
    assert tok.encode(text) == reference.encode(text, vocab, merges)


@pytest.mark.parametrize("threads", [2, 3, 8])
@given(text=mixed_text)
@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])
def test_threaded_encode_equals_one_thread(trained, threads, text):
    # Over 2 MB a text is cut at safe edges and its parts encoded on threads.
    text = (text + " x") * (3_000_000 // (len(text) + 2) + 1)
    many = Tokenizer(*trained, special_tokens=[EOT], num_threads=threads)
    one = Tokenizer(*trained, special_tokens=[EOT], num_threads=1)
    assert many.encode_to_numpy(text).tolist() == one.encode_to_numpy(text).tolist()


def test_threaded_encode_on_real_text(trained, real_text):
    text = real_text * 8  # 3.5 MB
    many = Tokenizer(*trained, special_tokens=[EOT], num_threads=16)
    one = Tokenizer(*trained, special_tokens=[EOT], num_threads=1)
    assert many.encode(text) == one.encode(text)


def test_threaded_encode_with_several_specials(trained):
    specials = [EOT, "<pad>", "<|end"]  # a prefix of EOT too: longest first
    text = "".join(f"word {i}{EOT}x<pad> y <|end z{EOT[:5]} \n" for i in range(100_000))
    many = Tokenizer(*trained, special_tokens=specials, num_threads=5)
    one = Tokenizer(*trained, special_tokens=specials, num_threads=1)
    assert many.encode(text) == one.encode(text)
    assert many.encode_to_numpy(text).tolist() == one.encode(text)


# ---- encode_batch ----------------------------------------------------------------------------

@given(texts=st.lists(st.one_of(mixed_text, unicode_text), max_size=12))
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
def test_encode_batch_equals_encode_each(tok, texts):
    assert tok.encode_batch(texts) == [tok.encode(t) for t in texts]


def test_encode_batch_keeps_texts_apart(tok, tiktoken_enc):
    # Nothing joins across two texts: not a special token split over two ...
    texts = [EOT[:6], EOT[6:], EOT, "", "a" + EOT, EOT + EOT, " ", " x", "x ", "\n", "\n"]
    assert tok.encode_batch(texts) == [tiktoken_enc.encode(t, allowed_special="all")
                                       for t in texts]
    # ... nor a unit or a pre-token ("  " + "x" would be " " + " x" in one text).
    assert tok.encode_batch(["  ", "x"]) == [tok.encode("  "), tok.encode("x")]
    assert tok.encode_batch(iter(["ab", "cd"])) == [tok.encode("ab"), tok.encode("cd")]
    assert tok.encode_batch([]) == []


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_encode_batch_on_real_text(trained, real_text, tiktoken_enc, threads):
    # Over 256 K characters a batch is cut into runs of texts (eight a thread), made UTF-8 by
    # the calling thread while the threads encode the runs before.
    many = Tokenizer(*trained, special_tokens=[EOT], num_threads=threads)
    lines = (real_text * 6).splitlines(keepends=True)
    assert many.encode_batch(lines) == tiktoken_enc.encode_batch(lines, allowed_special="all")


def test_collector_pause_ends_with_the_call_that_took_it():
    # encode_batch pauses the cyclic garbage collector while it makes its lists. A pause
    # shared by overlapping calls, lifted by the last to end, kept the collector off for good
    # while two threads called encode_batch in turn: cyclic garbage grew to gigabytes.
    import gc
    from bpe_cffi.tokenizer import _collector_pause
    assert gc.isenabled()
    held = _collector_pause.take()
    assert held is not None
    gc.disable()
    try:
        assert _collector_pause.take() is None  # another call now: no pause of its own
        if hasattr(os, "fork"):  # a child has no thread left to lift the pause
            pid = os.fork()
            if pid == 0:
                os._exit(0 if gc.isenabled() and _collector_pause.take() else 1)
            assert os.waitpid(pid, 0)[1] == 0
    finally:
        gc.enable()
        held.release()
    again = _collector_pause.take()  # the next call's
    assert again is not None
    again.release()


def test_cyclic_garbage_is_collected_while_threads_call_encode_batch_in_turn(trained):
    # Two threads calling encode_batch back to back kept a shared pause taken for good: a
    # cycle made meanwhile on the main thread was never collected (RSS grew by 0.7 GB in 7 s).
    import threading
    import weakref
    tok = Tokenizer(*trained, num_threads=1)
    texts = [f"a short line of text {i}" for i in range(2000)]
    stop = threading.Event()

    def calls():
        while not stop.is_set():
            tok.encode_batch(texts)

    class Cycle:
        def __init__(self):
            self.me = self

    threads = [threading.Thread(target=calls) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.2)  # both calling
        garbage = weakref.ref(Cycle())
        deadline = time.monotonic() + 30
        while garbage() is not None and time.monotonic() < deadline:
            [Cycle() for _ in range(1000)]  # allocations, which start collections
            time.sleep(0.01)
        assert garbage() is None
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_encode_batch_and_load_interrupted_anywhere_leave_the_collector_on(trained, tmp_path):
    # Python raises a pending KeyboardInterrupt (Ctrl-C) on entering a function and after a
    # call into C returns. One raised on entering the pause's __exit__ skipped lifting it: the
    # collector stayed off for the rest of the process. Here one is raised at each such point
    # of the method's own code and the pause's, in turn (a profile function sees them; one
    # deeper is an error of the body, as one there); at worst the pause stays taken with the
    # collector on, and the test gives it back for the next round.
    import gc
    from bpe_cffi import tokenizer
    tok = Tokenizer(*trained, special_tokens=[EOT])
    tok.save(tmp_path / "t")
    lock = tokenizer._collector_pause._lock
    for method, args in ((tok.encode_batch, (["ab cd", "e" + EOT],)),
                         (Tokenizer.load, (tmp_path / "t",))):
        own = {method.__code__, tokenizer._collector_paused.__code__,
               tokenizer._CollectorPause.take.__code__}
        for k in itertools.count(1):
            seen = 0

            def interrupt_at_k(frame, event, arg):
                nonlocal seen
                if event == "c_return" and frame.f_code in own or \
                        event == "call" and frame.f_back and frame.f_back.f_code in own:
                    seen += 1
                    if seen == k:
                        raise KeyboardInterrupt

            sys.setprofile(interrupt_at_k)
            try:
                method(*args)
                break  # k is past the call's last point
            except KeyboardInterrupt:
                pass
            finally:
                sys.setprofile(None)
            assert gc.isenabled(), (method.__name__, k)
            if lock.locked():
                lock.release()
        assert k > 5  # (the call ran to its end at k)
    held = tokenizer._collector_pause.take()
    assert held is lock
    held.release()


def test_a_pause_left_taken_by_an_interrupt_is_made_anew(monkeypatch):
    # An interrupt just after the pause's lock was taken left it held, with the collector on,
    # and every later call ran without a pause (its lists twice as slow) for good.
    import gc
    from bpe_cffi import tokenizer
    pause = tokenizer._CollectorPause()
    clock = [100.0]
    monkeypatch.setattr(tokenizer.time, "monotonic", lambda: clock[0])
    left = pause.take()  # as if its taker had been interrupted: never given back
    assert left is not None and gc.isenabled()
    assert pause.take() is None  # a holder may be between two steps
    clock[0] += 0.5
    assert pause.take() is None
    clock[0] += 1
    fresh = pause.take()  # held, the collector on, for over a second: left behind
    assert fresh is not None and fresh is not left
    fresh.release()
    left.release()  # (were its holder alive, it would give back its own)
    again = pause.take()
    assert again is fresh
    again.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_at_any_step_of_the_pause_collects():
    # A fork can fall between any two steps of a call's pause: the child's collector runs, and
    # it can take the pause itself (its holder's thread does not run there to give it back).
    import gc
    from bpe_cffi.tokenizer import _collector_pause

    def child_collects() -> bool:
        pid = os.fork()
        if pid == 0:
            held = _collector_pause.take()
            os._exit(0 if gc.isenabled() and held else 1)
        return os.waitpid(pid, 0)[1] == 0

    held = _collector_pause.take()
    assert held is not None and child_collects()
    gc.disable()
    try:
        assert child_collects()
    finally:
        gc.enable()
        assert child_collects()
        held.release()
    assert child_collects()


def test_encode_batch_of_long_and_short_texts_with_specials(tok, tiktoken_enc):
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    long_text = sample[:70_000] + EOT + sample[70_000:140_000] + EOT
    texts = [long_text, "a" + EOT, EOT + EOT + " b", long_text[:500] + EOT, ""]
    want = [tiktoken_enc.encode(t, allowed_special="all") for t in texts]
    assert tok.encode_batch(texts) == want
    assert [tok.encode(t) for t in texts] == want


def test_encode_batch_regex_path_and_errors(trained):
    plain = Tokenizer(*trained, special_tokens=[EOT], pattern=REGEX_GPT2)
    texts = ["hello world", EOT + " x", "", EOT + EOT, "a" + EOT]
    assert plain.encode_batch(texts) == [plain.encode(t) for t in texts]
    tok = Tokenizer(*trained, special_tokens=[EOT])
    assert plain.encode_batch(texts) == tok.encode_batch(texts)
    with pytest.raises(TypeError, match="takes str"):
        tok.encode_batch(["a", b"b"])
    # Items are checked only once something fails on one: also from the threads of a large
    # batch, and for an item that has no length at all.
    many = ["some words of a line"] * 200_000
    for bad in (b"b", 7, None):
        for method in (tok.encode_batch, tok.encode_batch_to_numpy):
            with pytest.raises(TypeError, match=f"{method.__name__} takes str"):
                method(many[:150_000] + [bad] + many[150_000:])
    with pytest.raises(TypeError):
        tok.encode_batch("not a list of texts but a str is iterable".encode())
    for method in (tok.encode_batch, tok.encode_batch_to_numpy, plain.encode_batch):
        with pytest.raises(TypeError, match="takes an iterable of texts, not a str"):
            method("a str, which is iterable: meant for encode")
    with pytest.raises(UnicodeEncodeError):
        tok.encode_batch(["a", "\ud800"])
    no_a9 = Tokenizer({i: bytes([i]) for i in list(range(0x80)) + [0xC3]}, [])
    with pytest.raises(ValueError, match=r"byte\(s\) 0xa9 which"):
        no_a9.encode_batch(["x", "é"])


def test_num_threads_errors(trained):
    with pytest.raises(ValueError, match="num_threads"):
        Tokenizer(*trained, num_threads=0)
    with pytest.raises(TypeError, match="num_threads"):
        Tokenizer(*trained, num_threads=2.0)


def test_num_threads_reaches_every_allowed_special_set(trained):
    tok = Tokenizer(*trained, [EOT, "<|pad|>"], num_threads=4)
    for allowed in (set(), {EOT}):
        tok.encode("x", allowed_special=allowed)  # an encoder for that set, kept
    tok.num_threads = 1
    assert tok._encoder_for(set()).num_threads == tok._encoder_for({EOT}).num_threads == 1
    assert tok._encoder_for("all").num_threads == 1


def test_no_id_left_for_a_special_token():
    vocab = {i: bytes([i]) for i in range(256)} | {2**31 - 1: b"ab"}
    with pytest.raises(ValueError, match="no id is left for the special token"):
        Tokenizer(vocab, [], [EOT])


def test_missing_byte_inside_a_two_token_unit_is_reported():
    # "é" is the bytes c3 a9; with a token for c3 only, the unit encodes to (id, -1): the
    # missing second byte must be reported, not dropped by the two-ids-inline shortcut.
    tok = Tokenizer({i: bytes([i]) for i in list(range(0x80)) + [0xC3]}, [])
    for text in ["é", "x\né", "é é"]:
        with pytest.raises(ValueError, match=r"byte\(s\) 0xa9 which"):
            tok.encode(text)


def test_missing_byte_in_the_last_part_of_a_long_text():
    # Over 2 MB a text is encoded in parts on the threads, and a list made a part at a time
    # as they are done: an error in the last part is raised, and the threads go on serving.
    tok = Tokenizer({i: bytes([i]) for i in list(range(0x80)) + [0xC3]}, [], num_threads=2)
    text = "some words, and a line\n" * 150_000
    for encode in (tok.encode, tok.encode_to_numpy):
        with pytest.raises(ValueError, match=r"byte\(s\) 0xa9 which"):
            encode(text + "é")
        assert list(encode(text)) == list(text.encode())


def test_missing_bytes_are_those_of_the_text_not_of_its_specials():
    # A special's bytes are its id: they were listed by encode (0xa9 of "‹é>") and not by
    # encode_batch; a batch's separators are listed by neither (byte 0 has no token here).
    tok = Tokenizer({i: bytes([i]) for i in list(range(1, 0x80)) + [0xC3]}, [], ["‹é>"])
    text = "‹é>ñ" * 30_000  # long: through the threads' parts too
    for encode in (tok.encode, tok.encode_to_numpy, lambda t: tok.encode_batch([t, "x"]),
                   lambda t: tok.encode_batch_to_numpy(["x", t, ""])):
        for t in (text[:4], text):
            with pytest.raises(ValueError, match=r"byte\(s\) 0xb1 which"):
                encode(t)


@pytest.mark.parametrize("merges, want", [
    ([(b"b", b"c"), (b"a", b"b"), (b"b", b"c")], [256, 99]),  # (b, c) ranks 2, not 0
    ([(b"a", b"b"), (b"b", b"c"), (b"a", b"b")], [97, 257])])
def test_a_merge_listed_twice_takes_its_last_rank_as_in_tokenizers(tmp_path, merges, want):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc"}
    for tok in (Tokenizer(vocab, merges), Tokenizer(vocab, merges, pattern=r"\w+|\W+")):
        assert tok.encode("abc") == want
        assert tok.encode_batch(["abc", "x abc"]) == [want, [120, 32] + want]
        assert tok.encode_to_numpy("abc " * 40_000).tolist() == (want + [32]) * 40_000
    assert reference.encode("abc", vocab, merges) == want
    bpe_cffi.save(vocab, merges, tmp_path)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode("abc").ids == want
    assert Tokenizer.load(tmp_path).encode("abc") == want


def test_a_token_whose_bytes_encode_to_other_tokens():
    # "abc" is a token, but its bytes merge (b, c) first and then nothing joins a and bc: a
    # word that is a token's bytes must still be encoded by the merges, not looked up.
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")]
    want = reference.encode("abc ab abc", vocab, merges)
    assert want[:2] == [97, 256]
    for pattern in (bpe_cffi.GPT2_PATTERN, REGEX_GPT2):
        tok = Tokenizer(vocab, merges, pattern=pattern)
        assert tok.encode("abc ab abc") == want
        assert tok.encode_batch(["abc", "abc ab abc"]) == [want[:2], want]


@pytest.mark.parametrize("pattern", [r"(\w+)\s?", r"(\w)+|\s", r"(?P<w>\w+)|(\s+)|(.)"])
def test_a_pattern_with_groups_encodes_whole_matches(trained, pattern):
    # regex.findall gives a pattern's groups, not its matches; pre-tokens are the matches.
    text = "hello world, foo  bar\nhello" + EOT + "world "
    want = reference.encode(text, *trained, [EOT], pattern)
    tok = Tokenizer(*trained, special_tokens=[EOT], pattern=pattern)
    assert tok.encode(text) == want
    assert tok.encode_batch([text, text]) == [want, want]
    assert tok.encode_to_numpy(text).tolist() == want


def draw_merges(data, tokens: list[bytes], most: int):
    """Up to `most` merges drawn at random from tokens (extended in place), and the
    vocabulary they make."""
    merges = []
    for _ in range(data.draw(st.integers(0, most))):
        a, b = data.draw(st.sampled_from(tokens)), data.draw(st.sampled_from(tokens))
        if a + b not in tokens:
            merges.append((a, b))
            tokens.append(a + b)
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return vocab, merges


@given(data=st.data())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_random_merges_match_reference(data):
    # Merges drawn at random rather than trained, so many tokens' bytes encode to several
    # tokens: the whole-token lookup (csrc/encoder.c) must know which.
    tokens = [b"a", b"b", b"c", b" "]
    vocab, merges = draw_merges(data, tokens, 60)
    words = data.draw(st.lists(st.text(alphabet="abc", min_size=1, max_size=12), max_size=40))
    text = " ".join(words + [bytes(t).decode() for t in tokens[4:]])  # every token's bytes
    want = reference.encode(text, vocab, merges)
    for pattern in (bpe_cffi.GPT2_PATTERN, REGEX_GPT2):
        assert Tokenizer(vocab, merges, pattern=pattern).encode(text) == want
    texts = words + [bytes(t).decode() for t in tokens[4:]]
    assert Tokenizer(vocab, merges).encode_batch(texts) == \
        [reference.encode(t, vocab, merges) for t in texts]


@given(data=st.data())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_random_merges_on_long_words_match_reference(data):
    # Words over 128 bytes take the long-word way (csrc/long_word.c): random merges, so that
    # tokens of every length meet, and words that repeat a piece, so that they grow long.
    vocab, merges = draw_merges(data, [b"a", b"b", b"c"], 40)
    piece = data.draw(st.text(alphabet="abc", min_size=1, max_size=40))
    tail = data.draw(st.text(alphabet="abc", max_size=200))
    word = piece * (129 // len(piece) + data.draw(st.integers(1, 8))) + tail
    tok = Tokenizer(vocab, merges)
    assert tok.encode(word) == reference.encode(word, vocab, merges)


# ---- allowed_special ---------------------------------------------------------------------

SECOND = "<|fim|>"


@pytest.fixture(scope="module")
def two_specials(trained):
    return Tokenizer(*trained, special_tokens=[EOT, SECOND])


def _tiktoken_of(tok):
    import tiktoken
    ranks = {tok.id_to_token[i]: i for i in range(256 + len(tok.merges))}
    return tiktoken.Encoding("test", pat_str=tok.pattern, mergeable_ranks=ranks,
                             special_tokens=tok.special_ids)


@pytest.mark.parametrize("allowed", ["all", set(), {EOT}, {SECOND}, frozenset([EOT, SECOND])])
@given(text=st.lists(st.sampled_from(["a", " the", EOT, SECOND, "<|", "fim", "|>", "\n", "é"]),
                     max_size=30).map("".join))
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_allowed_special_as_tiktoken(two_specials, allowed, text):
    # A special token outside allowed_special is encoded as ordinary text, as tiktoken does
    # with disallowed_special=().
    want = _tiktoken_of(two_specials).encode(text, allowed_special=allowed,
                                             disallowed_special=())
    tok = two_specials
    assert tok.encode(text, allowed_special=allowed) == want
    assert tok.encode_to_numpy(text, allowed_special=allowed).tolist() == want
    assert tok.encode_batch([text, "x"], allowed_special=allowed)[0] == want
    assert list(tok.encode_iterable(iter(text), allowed_special=allowed)) == want


@pytest.mark.slow
def test_allowed_special_in_long_texts_and_files(two_specials, tmp_path):
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    text = (sample + SECOND) * 6  # over 2 MB: cut for threads, and for processes in a file
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    want = _tiktoken_of(two_specials).encode(text, allowed_special={SECOND},
                                             disallowed_special=())
    assert two_specials.encode(text, allowed_special={SECOND}) == want
    out = tmp_path / "ids.npy"
    for workers in (1, 2):
        two_specials.encode_file(path, out, num_workers=workers, allowed_special={SECOND})
        assert np.load(out).tolist() == want
    assert list(two_specials.encode_iterable(text.splitlines(keepends=True),
                                             allowed_special={SECOND})) == want


@pytest.mark.parametrize("workers", [1, 2])
def test_allowed_special_as_an_iterator_in_files(two_specials, tmp_path, workers):
    # Read once: encode_file checks the argument, then plans and encodes with the same set.
    text = ("one" + EOT + "two" + SECOND + "three\n") * 3
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "ids.npy"
    for allowed in ({SECOND}, {EOT, SECOND}, set()):
        two_specials.encode_file(path, out, num_workers=workers, allowed_special=iter(allowed))
        assert np.load(out).tolist() == two_specials.encode(text, allowed_special=allowed)


def test_allowed_special_refuses_unknown_tokens(two_specials):
    with pytest.raises(ValueError, match="not special tokens"):
        two_specials.encode("x", allowed_special={"<|nope|>"})
    with pytest.raises(ValueError, match='"all" or a set'):
        two_specials.encode("x", allowed_special="none")
    for bad in (None, 3):  # "'NoneType' object is not iterable" once
        with pytest.raises(TypeError, match=f'"all" or a set of special tokens, not {bad}'):
            two_specials.encode("x", allowed_special=bad)


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="ASan holds freed memory in its quarantine: RSS tells nothing there")
def test_memory_kept_between_calls_is_bounded(trained):
    # Slot caches once kept up to 128 MB of scratch between calls (80 encode_batch calls of
    # 30 MB grew a process by 145 MB). Now nothing is kept but what the allocator keeps of
    # one call's scratch (docs/design.md, "Memory"): once warm, more calls add nothing.
    tok = Tokenizer(*trained, special_tokens=[EOT], num_threads=2)
    docs = open(bpe_cffi.sample_path(), encoding="utf-8").read().split(EOT) * 8  # 3 MB
    for _ in range(3):
        tok.encode_batch(docs), tok.encode_to_numpy("".join(docs))
    settled = _rss_mb()
    for _ in range(15):
        tok.encode_batch(docs), tok.encode_to_numpy("".join(docs))
    assert _rss_mb() - settled < 16, f"{_rss_mb() - settled:.1f} MB more after 15 calls"


@given(texts=st.lists(st.lists(st.sampled_from(["a", " the", EOT, "\n", "é", "字", "  "]),
                               max_size=20).map("".join), max_size=12))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_encode_batch_to_numpy_equals_encode_batch(tok, texts):
    ids, offsets = tok.encode_batch_to_numpy(texts)
    assert ids.dtype == tok.dtype and offsets.dtype == np.int64
    assert len(offsets) == len(texts) + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
    assert [ids[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == tok.encode_batch(texts)


def test_encode_batch_to_numpy_on_threads(tok):
    docs = open(bpe_cffi.sample_path(), encoding="utf-8").read().split(EOT) * 8  # 3 MB: runs
    ids, offsets = tok.encode_batch_to_numpy(docs)
    assert [ids[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == tok.encode_batch(docs)


@pytest.mark.parametrize("specials", [[EOT], [EOT, "<|end", "<pad>"], [EOT, "x\0y"]])
@given(docs=st.lists(st.lists(st.sampled_from(["a", "é ", EOT, EOT[:5], EOT[5:], "<pad>",
                                               "<|end", "d>", "<|", "\n", "x", "y", "\0"]),
                              max_size=6)
                     .map("".join), min_size=1, max_size=10),
       long=st.booleans())
@example(docs=["a" + EOT[:5], EOT[5:] + "b"], long=False)  # a special across two documents
@example(docs=["a" + EOT[:5], EOT[5:] + "b"], long=True)
@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
def test_document_pieces_equal_each_document_searched_alone(specials, docs, long):
    # The specials of the joined documents are found once, unless one straddles two documents;
    # either way the pieces are those of each document searched on its own. long: repeated
    # past 64 KB, where the search takes its array form (at most 4 000 times: all but the
    # shortest lists of documents), and no further, since the one-by-one search that checks
    # it costs Python's time per document. The documents back to back (utf8_offsets) or
    # joined by U+0000 (utf8_documents, unless one holds it), which a special may hold too.
    from bpe_cffi.counter import utf8_documents, utf8_offsets
    from bpe_cffi.specials import SpecialTokens
    found = SpecialTokens(specials, {s: i for i, s in enumerate(specials)})
    once = len("".join(docs).encode())
    repeat = min(4000, (1 << 16) // max(1, once) + 1) if long else 1
    data, offsets = utf8_offsets(docs * repeat)
    joined, doc_starts, doc_ends = utf8_documents(docs * repeat)
    assert [joined[a:b] for a, b in zip(doc_starts, doc_ends)] == \
        [data[a:b] for a, b in zip(offsets, offsets[1:])]
    for data, doc_starts, doc_ends in ((data, offsets[:-1], offsets[1:]),
                                       (joined, doc_starts, doc_ends)):
        (starts, ends, ids), last = found.document_pieces(data, doc_starts, doc_ends)
        (want_starts, want_ends, want_ids), want_last = \
            found._pieces_one_by_one(data, doc_starts, doc_ends)
        assert list(map(int, starts)) == want_starts.tolist()
        assert list(map(int, ends)) == want_ends.tolist()
        assert list(map(int, ids)) == want_ids.tolist()
        assert list(map(int, last)) == want_last.tolist()


def test_a_special_holding_u0000_keeps_the_batch_in_one_search(monkeypatch):
    # Texts are joined by U+0000; a special token that holds it would be found at every
    # separator, and every batch searched text by text in Python (ten times slower).
    from bpe_cffi.specials import SpecialTokens
    vocab = {i: bytes([i]) for i in range(256)}
    tok = bpe_cffi.Tokenizer(vocab, [], [EOT, "\0"])
    texts = ["ab", "", "c", EOT, "b"] * 20_000  # over 64 KB: the arrays' search

    def one_by_one(*args):
        raise AssertionError("searched text by text")

    monkeypatch.setattr(SpecialTokens, "_pieces_one_by_one", one_by_one)
    want = [tok.encode(t) for t in texts[:5]] * 20_000
    assert tok.encode_batch(texts) == want
    assert bpe_cffi.count_words_from_iterator(texts, [EOT, "\0"], num_workers=1) == \
        {b"ab": 20_000, b"c": 20_000, b"b": 20_000}


def test_utf8_documents_are_the_texts_joined():
    from bpe_cffi.counter import utf8_documents
    for texts in ([], [""], ["", ""], ["a", "", "é字🙂"], ["a\0b", "c"], ["\0"], ["a", "\0"]):
        data, starts, ends = utf8_documents(texts)
        assert [data[a:b].decode() for a, b in zip(starts, ends)] == texts
        separated = not any("\0" in t for t in texts)
        assert data == ("\0" if separated else "").join(texts).encode()
    with pytest.raises(UnicodeEncodeError):
        utf8_documents(["a", "\ud800"])


@pytest.mark.parametrize("pattern", [None, REGEX_GPT2])
def test_a_lone_surrogate_in_a_batch_is_the_error_of_its_text(trained, pattern):
    # As when each text is encoded apart (tiktoken's batches): the error's object is the text
    # that holds the surrogate and its position counts in that text, not in the batch joined.
    options = {} if pattern is None else {"pattern": pattern}
    tok = Tokenizer(*trained, special_tokens=[EOT], **options)
    bad = "ab\ud800c \udc00"
    many = ["some words of a line"] * 100_000  # over a run: the batch is cut for threads
    for texts in (["ok", "x" + EOT, bad, "\udfff"], many + [bad] + many):
        for method in (tok.encode_batch, tok.encode_batch_to_numpy):
            with pytest.raises(UnicodeEncodeError) as caught:
                method(texts)
            assert (caught.value.object, caught.value.start, caught.value.end) == (bad, 2, 3)


def test_long_inputs_encode_and_count_while_the_interpreter_shuts_down(tmp_path):
    # A thread still running after the main thread returned (or an atexit handler) got
    # "RuntimeError: cannot schedule new futures after interpreter shutdown" from every input
    # long enough to be cut for threads.
    script = textwrap.dedent(f"""
        import threading, time, numpy, bpe_cffi
        vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 300)
        tok = bpe_cffi.Tokenizer(vocab, merges, num_threads=2)
        text = "hello world, " * 250_000  # 3.2 MB: cut for the threads
        want = tok.encode(text)
        batch = [text[:300_000]] * 4  # over 256 K characters: runs of texts for the threads
        want_batch = tok.encode_batch(batch)
        path = {str(tmp_path / "corpus.txt")!r}
        open(path, "w").write(text)
        counts = bpe_cffi.count_words(path)
        out = path + ".npy"

        def late():
            time.sleep(0.5)  # the main thread has returned
            assert tok.encode(text) == want
            assert tok.encode_batch(batch) == want_batch
            assert bpe_cffi.count_words(path) == counts
            # 1 MB ranges of a plain file, encoded on threads of this process
            assert tok.encode_file(path, out, num_workers=2) == len(want)
            assert numpy.load(out).tolist() == want
            print("ok")

        threading.Thread(target=late).start()
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout == "ok\n", run.stderr[-2000:]


def test_a_job_run_here_when_the_pool_refuses_it_fails_in_its_turn():
    # encode_file's jobs run on the calling thread once the pool takes no more; the error of
    # one was raised as it was submitted, before the results of the jobs ahead of it.
    from concurrent.futures import ThreadPoolExecutor
    from bpe_cffi.threads import submit_or_run

    def job(k):
        if k == 1:
            raise ValueError("range 1 is not UTF-8")
        return k

    pool = ThreadPoolExecutor(1)
    first = submit_or_run(pool, job, 0)
    pool.shutdown()  # as at the interpreter's shutdown: submit raises RuntimeError
    refused = [submit_or_run(pool, job, k) for k in (1, 2)]
    assert first.result() == 0
    with pytest.raises(ValueError, match="range 1"):
        refused[0].result()
    assert refused[1].result() == 2


@pytest.mark.parametrize("family, text", [("o200k", b"\n/" * 1_000_000),
                                          ("cl100k", " \u3000".encode() * 500_000)],
                         ids=["o200k", "cl100k"])
def test_cutting_text_with_few_edges_searches_an_eighth_of_it(family, text):
    # Text that the memchr filter lets through but that holds no edge: each cut for threads
    # was searched for to the end of the text, at up to 350 ns a byte (a 2 MB text took 0.8
    # s to plan and 0.13 s to encode). A cut is now looked for an eighth of a part past where
    # it would fall, and left out if not there.
    from bpe_cffi.chunking import Edges
    from bpe_cffi.patterns import pretokenizer
    edges = Edges([], pretokenizer(bpe_cffi.PATTERNS[family]).edges)
    finder = _SearchCounter(edges)
    assert edges.plan_text(text, 8) == [(0, len(text))]
    assert 0 < finder.searched <= len(text) // 8 + 8 * 64, finder.searched
    with_edges = text + b" a" + text  # the edge is found where it lies, in its window
    cuts = [a for a, _ in edges.plan_text(with_edges, 2)]
    assert cuts == [0, len(text) + 2]  # before the whitespace after "a"


# ---- what the API hands out and takes --------------------------------------------------------

def test_tables_handed_out_do_not_change_the_tokenizer(tok, tmp_path):
    # special_tokens was the encoder's own list: a token appended to it made a later encode
    # fail with KeyError; id_to_token was the decoder's dict, whose change reached decode of
    # short lists and not of long ones (their C table was made before).
    ids = tok.encode("hello world")
    tok.decode(ids * 64)
    for change in (lambda: tok.special_tokens.append("<|pad|>"),
                   lambda: tok.special_ids.update({"<|pad|>": 1}),
                   lambda: tok.merges.append((b"a", b"b")), lambda: tok.merges.sort()):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert tok.special_tokens == [EOT] and list(tok.special_ids) == [EOT]
    assert len(tok.merges) == len(tok.id_to_token) - 257  # 256 bytes, the merges, EOT
    # The encoder's settings too: dtype = np.uint8 wrapped the ids of encode_to_numpy and
    # encode_file without an error (the pre-tokenizer and vocab_size are the encoder's too).
    for name in ("dtype", "pretokenizer", "vocab_size"):
        with pytest.raises(AttributeError):
            setattr(tok, name, getattr(tok, name))
    with pytest.raises(TypeError):
        tok.id_to_token[ids[0]] = b"HELLO"
    with pytest.raises(TypeError):
        tok.token_to_id[b"HELLO"] = ids[0]
    with pytest.raises(TypeError):
        tok.id_to_token.update({ids[0]: b"HELLO"})
    # Still dicts, for what takes only dicts (tiktoken's ranks), pickled and copied as such.
    import pickle
    assert isinstance(tok.token_to_id, dict) and type(pickle.loads(pickle.dumps(
        tok.id_to_token))) is dict and type(tok.token_to_id.copy()) is dict
    assert type(pickle.loads(pickle.dumps(tok.merges))) is list and tok.merges is tok.merges
    assert tok.decode(ids) == "hello world" and tok.decode(ids * 64) == "hello world" * 64
    same = Tokenizer(tok.id_to_token, tok.merges, tok.special_tokens)  # the views are taken
    assert same.encode("hello world" + EOT) == tok.encode("hello world" + EOT)
    bpe_cffi.save(tok.id_to_token, tok.merges, tmp_path, tok.special_tokens)
    assert Tokenizer.load(tmp_path).encode("hello world") == ids


def test_decode_of_ids_that_start_at_any_byte(tok):
    # An int64 view into a buffer at an odd offset went to C as it was, a misaligned read
    # (UBSan's report in the sanitizer run); the text was right on x86 all the same.
    ids = tok.encode_to_numpy("hello world " * 1_000).astype(np.int64)
    buffer = np.zeros(1 + ids.nbytes, np.uint8)
    buffer[1:] = ids.view(np.uint8)
    odd = buffer[1:].view(np.int64)
    assert not odd.flags.aligned
    assert tok.decode(odd) == "hello world " * 1_000


def test_decode_refuses_a_2d_array_and_bools_with_a_short_message(tok):
    ids = tok.encode_to_numpy("hello world " * 10_000)
    with pytest.raises(TypeError, match=r"1-D sequence of ids, not an array of shape \(1, "):
        tok.decode(ids[None, :])  # a model's (1, N) output: its message was 1.3 MB long
    with pytest.raises(TypeError, match="decode takes ids, not an array of bools"):
        tok.decode(np.array([True, False]))  # decoded as the bytes 0x01 0x00
    with pytest.raises(TypeError) as e:
        tok.decode([1, ids.tolist()])
    assert len(str(e.value)) < 200


def test_a_str_subclass_is_encoded_by_its_characters_in_every_method(tok):
    class Shouting(str):
        def encode(self, *args, **kwargs):
            return b"XXX"

    text = Shouting("hello world")
    want = tok.encode("hello world")
    assert tok.encode(text) == want and tok.encode_to_numpy(text).tolist() == want
    assert tok.encode_batch([text]) == [want] and list(tok.encode_iterable([text])) == want


def test_argument_types_are_named(tok):
    with pytest.raises(TypeError, match="pattern must be a str, not list"):
        Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=["\\w+"])  # "unhashable"
    with pytest.raises(TypeError, match="allowed_special"):
        tok.encode("x", allowed_special=b"all")  # its ints were named as unknown specials
    with pytest.raises(TypeError, match="allowed_special holds 1"):
        tok.encode("x", allowed_special={1})
    with pytest.raises(TypeError, match="allowed_special"):
        tok.encode_iterable(["x"], allowed_special=None)  # only at the first next()
    with pytest.raises(TypeError, match="encode_iterable takes an iterable of str, not NoneType"):
        tok.encode_iterable(None)
    assert tok.encode("x" + EOT, allowed_special={np.str_(EOT)}) == tok.encode("x" + EOT)
    with pytest.raises(TypeError, match="encode_batch takes an iterable of str, not bytes"):
        tok.encode_batch(b"hello")  # "takes str, not int"
    with pytest.raises(TypeError, match="encode_iterable takes an iterable of str, not bytes"):
        tok.encode_iterable(b"hello")


def test_a_long_text_split_by_the_regex_is_encoded_in_bounded_memory(trained, tiktoken_enc,
                                                                      monkeypatch):
    # Its pre-tokens were listed whole as strs, 25-44 bytes a character (encode_file of a
    # 64 MB file with no special token to cut at: 2.8 GB); now a batch of them at a time,
    # here a small one so that the text holds hundreds (specials among them).
    from bpe_cffi import encoder
    monkeypatch.setattr(encoder, "_REGEX_BATCH", 1 << 12, raising=False)
    tok = Tokenizer(*trained, special_tokens=[EOT], pattern=REGEX_GPT2, cache_bytes=0)
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()[:200_000]
    text = (sample + EOT) * 6 + sample  # 1.4 M characters, over a batch of pre-tokens
    want = tiktoken_enc.encode(text, allowed_special="all")
    tracemalloc.start()
    got = tok.encode_to_numpy(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert got.tolist() == want
    assert peak < 10 * len(text), f"peak traced memory {peak / len(text):.1f} bytes a character"
    with pytest.raises(UnicodeEncodeError) as e:  # where in the text, as for a short one
        tok.encode(text[:900_000] + "\ud800" + text[900_000:])
    assert e.value.start == 900_000
    # A byte without a token: the error names every such byte of the text, not of a batch.
    vocab = {i: t for i, t in trained[0].items() if t not in (b"!", b"?")}
    merges = [m for m in trained[1] if b"!" not in m[0] + m[1] and b"?" not in m[0] + m[1]]
    vocab = {i: t for i, t in vocab.items() if i < 256 or any(a + b == t for a, b in merges)}
    lacking = Tokenizer(vocab, merges, [EOT], pattern=REGEX_GPT2)
    with pytest.raises(ValueError, match="0x21, 0x3f which have no token"):
        lacking.encode("!" + text.replace("!", "").replace("?", "") + "?")
