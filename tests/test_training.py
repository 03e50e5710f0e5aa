"""Training: the spec's examples, differential tests against tests/reference.py, layout, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import PATTERNS, train_bpe, train_from_counts

import reference

EOT = "<|endoftext|>"
SPEC_TEXT = ("low low low low low\nlower lower widest widest widest\n"
             "newest newest newest newest newest newest")


def write(tmp_path, text: str, name="corpus.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


# ---- the spec's worked examples -------------------------------------------------------------

def test_spec_worked_example(tmp_path):
    vocab, merges = train_bpe(write(tmp_path, SPEC_TEXT), 263, [EOT], pattern=r"\S+")
    assert merges == [(b"s", b"t"), (b"e", b"st"), (b"o", b"w"), (b"l", b"ow"),
                      (b"w", b"est"), (b"n", b"e")]
    assert vocab[262] == EOT.encode()
    assert len(vocab) == 263


def test_spec_initial_pair_counts():
    counts = reference.word_counts(SPEC_TEXT, [EOT], r"\S+")
    assert counts == {b"low": 5, b"lower": 2, b"widest": 3, b"newest": 6}


def test_spec_tie_break():
    # After (Z,Z) and (B,A) are merged, (A,B), (A,C), (B,ZZ) and (BA,A) all count 3;
    # the spec: the greatest (bytes, bytes) tuple wins, so (BA, A) first.
    counts = {b"ZZ": 100, b"BA": 50, b"AB": 3, b"AC": 3, b"BZZ": 3, b"BAA": 3}
    _, merges = train_from_counts(counts, 256 + 6)
    assert merges == [(b"Z", b"Z"), (b"B", b"A"), (b"BA", b"A"), (b"B", b"ZZ"),
                      (b"A", b"C"), (b"A", b"B")]
    assert merges == reference.train(counts, 6)


def test_overlapping_pair_merges_left_to_right():
    # the spec: "a a a" with (a, a) becomes "aa a".
    _, merges = train_from_counts({b"aaa": 1}, 258)
    assert merges == [(b"a", b"a"), (b"aa", b"a")]
    with pytest.warns(UserWarning, match="ran out of pairs after 3 of 44 merges"):
        _, merges = train_from_counts({b"aaaaa": 1}, 300)
    assert merges == reference.train({b"aaaaa": 1}, 44)


# ---- differential: C core vs reference on word counts --------------------------------------

word = st.binary(min_size=0, max_size=12)
small_alphabet_word = st.lists(st.sampled_from(b"ab\x00\xff"), max_size=16).map(bytes)
counts_strategy = st.dictionaries(st.one_of(word, small_alphabet_word),
                                  st.integers(min_value=0, max_value=50), max_size=30)


@given(counts=counts_strategy, bucket_limit=st.sampled_from([0, 2, 3, 7]))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_train_from_counts_matches_reference(counts, bucket_limit):
    # Run until the corpus is exhausted: every merge, ties included, must agree.
    want = reference.train(counts, 10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vocab, merges = train_from_counts(counts, 256 + 10_000, _bucket_limit=bucket_limit)
    assert merges == want
    assert [vocab[256 + k] for k in range(len(merges))] == [a + b for a, b in merges]


@given(n=st.integers(1, 3000), count=st.integers(1, 2**40))
@settings(max_examples=20)
def test_one_byte_repeated(n, count):
    counts = {b"x" * n: count}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, merges = train_from_counts(counts, 256 + 64)
    assert merges == reference.train(counts, 64)


def test_many_words_sharing_one_pair():
    counts = {bytes([i % 256, (i // 256) % 256]) + b"ab": i + 1 for i in range(3000)}
    _, merges = train_from_counts(counts, 256 + 40)
    assert merges == reference.train(counts, 40)


def test_huge_counts_do_not_need_huge_memory():
    counts = {b"the": 2**40, b"then": 2**40 + 1, b"hen": 3}
    _, merges = train_from_counts(counts, 256 + 4)
    assert merges == reference.train(counts, 4)


def test_counts_overflowing_int64_are_an_error():
    # The words' pair occurrences together must be below 2**63 (spec 1.4), though no one pair
    # need reach it: the error says so, and not that a count does not fit in 64 bits.
    for counts in ({b"ab": 2**62, b"abab": 2**62}, {b"ab": 2**62, b"cd": 2**62},
                   {b"abc": 2**62}):
        with pytest.raises(OverflowError, match="pair occurrences in all"):
            train_from_counts(counts, 300)
    assert train_from_counts({b"ab": 2**62, b"cd": 2**62 - 1}, 258)[1] == \
        [(b"a", b"b"), (b"c", b"d")]


# ---- differential: whole pipeline on text --------------------------------------------------

alphabet = st.sampled_from(list("aab  \n\t'sllé字🙂0١\u00a0\u3000\u2028<|>")
                           + ["<|endoftext|>", "<s>"])
texts = st.lists(alphabet, max_size=80).map("".join)


@given(text=texts, specials=st.sampled_from([[], [EOT], ["<s>", EOT], ["a"]]),
       pattern=st.sampled_from([bpe_cffi.GPT2_PATTERN, r"\S+|\s+", r"\w+|[^\w]"]))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_train_bpe_matches_reference(tmp_path, text, specials, pattern):
    path = write(tmp_path, text)
    want = reference.train_text(text, 256 + len(specials) + 60, specials, pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = train_bpe(path, 256 + len(specials) + 60, specials, pattern=pattern,
                        num_workers=1)
    assert got[1] == want[1]
    # Fewer merges than asked: the specials follow the merges directly, in both.
    assert got[0] == want[0]


def test_real_text_matches_reference(real_text, tmp_path):
    text = real_text[:60_000]
    path = write(tmp_path, text)
    vocab, merges = train_bpe(path, 256 + 1 + 150, [EOT], num_workers=1)
    assert merges == reference.train_text(text, 256 + 1 + 150, [EOT])[1]


def test_count_words_matches_reference(real_text, tmp_path):
    text = real_text
    path = write(tmp_path, text)
    assert bpe_cffi.count_words(path, [EOT]) == reference.word_counts(text, [EOT])


# ---- layout and invariants -----------------------------------------------------------------

def test_vocab_layout(tmp_path):
    specials = ["<b>", EOT, "<b>"]  # duplicate removed, order kept
    vocab, merges = train_bpe(write(tmp_path, SPEC_TEXT * 3), 256 + 2 + 10, specials)
    assert len(merges) == 10
    assert [vocab[i] for i in range(256)] == [bytes([i]) for i in range(256)]
    assert vocab[266] == b"<b>" and vocab[267] == EOT.encode()
    assert sorted(vocab) == list(range(268))


@pytest.mark.parametrize("pattern", ["gpt2", r"\S+|\s+"])
def test_specials_never_inside_a_merge(tmp_path, pattern):
    # With \S+ each special lies inside a pre-token ("cat<|endoftext|>sat") unless it is cut
    # out first; GPT-2's pattern cuts most of it apart by itself.
    text = ("the cat<|endoftext|>sat on<|endoftext|><|endoftext|>the mat|>" * 50)
    # 60 merges are more than this text has pairs for: it stops early, and says so.
    with pytest.warns(UserWarning, match="ran out of pairs"):
        vocab, merges = train_bpe(write(tmp_path, text), 256 + 1 + 60, [EOT], pattern=pattern)
    for a, b in merges:
        assert b"<|endoftext|>" not in a + b
        # No pair spans a cut: "t<" would need t and < adjacent across the special.
        for across in (b"t<", b">s", b"><", b"n<"):
            assert across not in a + b
    assert merges == reference.train_text(text, 256 + 1 + 60, [EOT], PATTERNS.get(pattern,
                                                                                pattern))[1]


def test_progress_reports_phases(tmp_path, capsys):
    train_bpe(write(tmp_path, SPEC_TEXT), 263, [EOT], progress=True)
    err = capsys.readouterr().err
    for phase in ("read", "pre-tokenize", "combine", "merge (C)", "output"):
        assert phase in err


def test_empty_file_gives_bytes_and_specials(tmp_path):
    with pytest.warns(UserWarning, match="ran out of pairs"):
        vocab, merges = train_bpe(write(tmp_path, ""), 300, [EOT])
    assert merges == []
    assert len(vocab) == 257 and vocab[256] == EOT.encode()


def test_results_do_not_depend_on_workers_or_chunks(tmp_path):
    import random
    rng = random.Random(0)
    words = ["the", "cat", "sat", "élan", "über", "字字", "🙂", "1234", "it's", "  ", "\n"]
    parts = []
    for i in range(400_000):
        parts.append(rng.choice(words))
        parts.append(rng.choice([" ", " ", "  ", "\n", "\t", ""]))
        if i % 5000 == 0:
            parts.append(EOT)
    path = write(tmp_path, "".join(parts))  # about 2.5 MB: several chunks
    results = [train_bpe(path, 256 + 1 + 200, [EOT], num_workers=w) for w in (1, 2, 4)]
    assert results[0] == results[1] == results[2]


# ---- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("vocab_size", ["300", 300.0, None, True])
def test_vocab_size_must_be_int(tmp_path, vocab_size):
    with pytest.raises(TypeError, match="vocab_size"):
        train_bpe(write(tmp_path, "abc"), vocab_size)


def test_vocab_size_too_small(tmp_path):
    with pytest.raises(ValueError, match="at least 256"):
        train_bpe(write(tmp_path, "abc"), 255)
    with pytest.raises(ValueError, match="258"):
        train_bpe(write(tmp_path, "abc"), 257, ["<a>", "<b>"])
    train_bpe(write(tmp_path, "abc"), 258, ["<a>", "<b>"])  # exactly enough: fine


def test_special_tokens_types(tmp_path):
    path = write(tmp_path, "abc")
    with pytest.raises(TypeError, match="list of str"):
        train_bpe(path, 300, "<|endoftext|>")
    with pytest.raises(TypeError, match="must be str"):
        train_bpe(path, 300, [b"<|endoftext|>"])
    with pytest.raises(ValueError, match="empty"):
        train_bpe(path, 300, [""])


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        train_bpe(tmp_path / "nope.txt", 300)


def test_directory_is_not_a_corpus(tmp_path):
    with pytest.raises(IsADirectoryError):
        train_bpe(tmp_path, 300)


def test_non_utf8_names_the_offset(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"hello world \xff\xfe more")
    with pytest.raises(ValueError, match="byte offset 12"):
        train_bpe(path, 300)


def test_invalid_pattern_is_named(tmp_path):
    with pytest.raises(ValueError, match=r"\(unclosed"):
        train_bpe(write(tmp_path, "abc"), 300, pattern="(unclosed")


def test_train_from_counts_type_errors():
    with pytest.raises(TypeError, match="bytes"):
        train_from_counts({"ab": 1}, 300)
    with pytest.raises(TypeError):
        train_from_counts([(b"ab", 1)], 300)
    with pytest.raises(ValueError, match=">= 0"):
        train_from_counts({b"ab": -1}, 300)
    for bad in (2.5, 0.9, "3", True, None):  # 2.5 was cut to 2, "3" read as 3
        with pytest.raises(TypeError, match="counts values must be ints"):
            train_from_counts({b"ab": bad, b"cd": 2}, 258)
    with pytest.raises(ValueError, match=">= 0"):
        train_from_counts({b"ab": -2**63 - 1}, 258)
    # Counts are 64-bit (spec 1.4): one past it is an OverflowError, as too many pair
    # occurrences are, whatever the word.
    for counts in ({b"ab": 2**64}, {b"ab": 2**63}, {b"a": 2**70, b"ab": 1}):
        with pytest.raises(OverflowError, match="below 2\\*\\*63"):
            train_from_counts(counts, 258)
    assert train_from_counts({b"ab": np.int64(3), b"cd": 2}, 258) == \
        train_from_counts({b"ab": 3, b"cd": 2}, 258)


def test_chunk_edge_far_from_the_nominal_cut(tmp_path):
    from bpe_cffi.chunking import Edges, plan_file
    from bpe_cffi.patterns import pretokenizer
    # No safe edge until 200 KB past the 1 MB target: the search window has to grow to it.
    text = "x" * 1_200_000 + " tail words" + " more" * 1000
    path = write(tmp_path, text)
    ranges = plan_file(str(path), Edges([], pretokenizer("gpt2").edges), 1 << 20)
    assert ranges[0] == (0, 1_200_000)
    assert bpe_cffi.count_words(path, num_workers=2) == reference.word_counts(text)
