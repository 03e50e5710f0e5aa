"""count_words: the C path equals the regex path and the reference, whatever the workers,
chunks and special tokens; the C counter's own behaviour."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import counting
from bpe_cffi.counter import WordCounter, arrays_to_counts, counts_to_arrays

import reference
from test_scanners import ODD, any_text, odd_text

EOT = "<|endoftext|>"
REGEX_GPT2 = "(?:" + bpe_cffi.GPT2_PATTERN + ")"  # split by the regex module, not in C


@given(text=st.one_of(odd_text, any_text, st.lists(st.sampled_from(ODD + [EOT]), max_size=30)
                      .map("".join)))
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_c_path_equals_regex_path_and_reference(tmp_path, text):
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    in_c = bpe_cffi.count_words(path, [EOT], num_workers=1)
    by_regex = bpe_cffi.count_words(path, [EOT], pattern=REGEX_GPT2, num_workers=1)
    assert in_c == by_regex == reference.word_counts(text, [EOT])


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_real_text_for_any_number_of_workers(real_text, tmp_path, workers):
    path = tmp_path / "real.txt"
    path.write_text(real_text * 8, encoding="utf-8")  # 3.5 MB: several chunks
    got = bpe_cffi.count_words(path, [EOT], num_workers=workers)
    assert got == bpe_cffi.count_words(path, [EOT], pattern=REGEX_GPT2, num_workers=1)


def test_default_workers(real_text, tmp_path, monkeypatch):
    # num_workers=None starts one process per SCANNER_BYTES_PER_WORKER of input (up to one per
    # core): a small input is counted without a pool; asked for, a pool is started.
    path = tmp_path / "real.txt"
    path.write_text(real_text * 5, encoding="utf-8")  # 2.2 MB: a few chunks
    want = bpe_cffi.count_words(path, [EOT], pattern=REGEX_GPT2, num_workers=1)

    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool was started")

    monkeypatch.setattr(counting, "process_pool", no_pool)
    assert bpe_cffi.count_words(path, [EOT]) == want
    with pytest.raises(AssertionError, match="pool was started"):
        bpe_cffi.count_words(path, [EOT], num_workers=2)


def test_chunk_edges_with_trailing_whitespace(tmp_path):
    # Whitespace at chunk edges and at the end of the file, odd spaces everywhere.
    text = "".join(f"w{i}\u3000 \u0085x{i}  \n\t" + ("\u2028" if i % 3 else EOT)
                   for i in range(200_000)) + "  \n "
    path = tmp_path / "edges.txt"
    path.write_text(text, encoding="utf-8")
    got = bpe_cffi.count_words(path, [EOT], num_workers=2)
    assert got == bpe_cffi.count_words(path, [EOT], pattern=REGEX_GPT2, num_workers=1)


def test_custom_pattern_is_split_by_regex(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a b a")
    assert bpe_cffi.count_words(path, pattern=r"\S+") == {b"a": 2, b"b": 1}


@pytest.mark.parametrize("pattern", [r"(\w+)\s?", r"(\w)+|\s", r"(?P<w>\w+)|(\s+)|(.)"])
def test_a_pattern_with_groups_counts_whole_matches(tmp_path, pattern):
    # regex.findall gives a pattern's groups, not its matches: pre-tokens are the whole
    # matches, as regex.finditer gives them, file and iterator alike.
    text = "hello world, foo  bar\nhello" + EOT + "world "
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    want = reference.word_counts(text, [EOT], pattern)
    assert bpe_cffi.count_words(path, [EOT], pattern=pattern) == want
    assert bpe_cffi.count_words_from_iterator([text], [EOT], pattern=pattern) == want


@pytest.mark.parametrize("words", [
    [], [b"a"], [b"", b"x", b"", b""], [b" the", b"\xe5\xad\x97", b"\n\n", b"'s"],
    [b"\xff", b"a\xffb", b"", b"c"],  # not UTF-8: the slicing path
])
def test_arrays_to_counts_round_trips(words):
    counts = {w: i + 1 for i, w in enumerate(words)}
    assert arrays_to_counts(counts_to_arrays(counts)) == counts


def test_counter_tells_apart_words_alike_in_their_first_bytes():
    # The table's slots hold a word's first sixteen bytes, zero-padded: words that differ only
    # past them, only in length or only in trailing zero bytes must stay apart.
    words = [b"", b"\x00", b"\x00\x00", b"a", b"a\x00"]
    for n in (7, 8, 9, 15, 16, 17, 23, 24, 25, 40):
        base = bytes(range(65, 65 + n))
        words += [base, base + b"\x00", base[:-1] + b"!", b"!" + base[1:]]
    # Hundreds alike in all sixteen bytes and the length, so some share a probe chain.
    words += [b"sixteen bytes..." + bytes([b]) + end for b in range(256) for end in (b"", b"z")]
    words = list(dict.fromkeys(words))
    counts = {w: i + 1 for i, w in enumerate(words)}
    counter = WordCounter()
    for _ in range(3):  # again and again, so every word is also found, not only inserted
        counter.add(*counts_to_arrays(counts))
    assert arrays_to_counts(counter.export()) == {w: 3 * c for w, c in counts.items()}


@pytest.mark.parametrize("words", [[], [b"a"], [b"a", b"\xff\xfe", b"b"], [b"\xff"],
                                   [b" x", b"yz"]])
def test_counter_to_dict(words):
    # count_words' dict comes from one split on 0xFF separators; a word holding 0xFF (never
    # from UTF-8 text) takes the slicing path instead.
    counts = {w: i + 2 for i, w in enumerate(words)}
    counter = WordCounter()
    counter.add(*counts_to_arrays(counts))
    got = counter.to_dict()
    assert got == counts and list(got) == words


def test_counter_takes_arrays_that_start_at_any_byte():
    # Dask hands a task's result back as views into one message: an int64 array there may
    # start at an odd address, and C read it misaligned (UBSan's report, in the sanitizer run).
    blob, offsets, counts = counts_to_arrays({b" apple": 5, b"b": 7})
    message = np.zeros(1 + offsets.nbytes + counts.nbytes, np.uint8)
    message[1:1 + offsets.nbytes] = offsets.view(np.uint8)
    message[1 + offsets.nbytes:] = counts.view(np.uint8)
    odd_offsets = message[1:1 + offsets.nbytes].view(np.int64)
    odd_counts = message[1 + offsets.nbytes:].view(np.int64)
    assert not odd_offsets.flags.aligned and not odd_counts.flags.aligned
    counter = WordCounter()
    counter.add(blob, odd_offsets, odd_counts)
    assert counter.to_dict() == {b" apple": 5, b"b": 7}


def test_counter_refuses_use_after_release():
    # The counter is C memory that release frees; using it again must be a Python error,
    # never a read of freed memory.
    counter = WordCounter()
    counter.add(*counts_to_arrays({b"a": 1}))
    counter.release()
    counter.release()  # twice: nothing more happens
    for use in (lambda: counter.to_dict(), lambda: counter.export(),
                lambda: counter.add(*counts_to_arrays({b"a": 1}))):
        with pytest.raises(ValueError, match="released"):
            use()
    assert np.array_equal(counts_to_arrays({})[1], [0])


@given(pieces=st.lists(st.one_of(st.sampled_from(["", "a", "é", "字", "🙂", " ", "ab"]),
                                 st.text(max_size=30)), max_size=12))
def test_utf8_offsets_of_pieces(pieces):
    # Empty pieces too: the regex path gives one to each special token and each text's end.
    # Runs of ASCII longer than eight bytes, so that the C walk skips whole blocks too.
    from bpe_cffi.counter import utf8_offsets
    pieces = [p.encode("utf-8", "replace").decode("utf-8") for p in pieces]  # no surrogates
    for repeat in (1, 3):
        pieces = [p * repeat for p in pieces] + ["plain ascii text"] * repeat
        want = [sum(len(p.encode()) for p in pieces[:k]) for k in range(len(pieces) + 1)]
        blob, offsets = utf8_offsets(pieces)
        assert blob == "".join(pieces).encode("utf-8")
        assert offsets.tolist() == want


def test_utf8_char_offsets_refuses_offsets_past_the_text():
    from bpe_cffi._lib import ffi, lib
    text = "é字🙂 abc".encode()
    for offsets, rc in (([0, 3, 7], 0), ([0, 8], lib.BPE_EINVAL), ([2, 1], lib.BPE_EINVAL)):
        buf = ffi.new("int64_t[]", offsets)
        assert lib.bpe_utf8_char_offsets(text, len(text), buf, len(offsets)) == rc
        if rc == 0:
            assert list(buf) == [0, len("é字🙂".encode()), len(text)]


def test_special_tokens_as_an_iterator(tmp_path):
    # count_words reads its special tokens once, for plain text and for documents alike: an
    # iterator was used up by the plain text files, and the others' specials were counted.
    path = tmp_path / "doc.jsonl"
    path.write_text('{"text": "a<|endoftext|>b"}\n', encoding="utf-8")
    plain = tmp_path / "plain.txt"
    plain.write_text("c<|endoftext|>d", encoding="utf-8")
    want = {b"a": 1, b"b": 1, b"c": 1, b"d": 1}
    for workers in (1, 2):
        assert bpe_cffi.count_words([plain, path], iter([EOT]), num_workers=workers) == want


@pytest.mark.parametrize("size", [1, 3, 50, 1 << 20])
def test_regex_pre_tokens_in_batches(tmp_path, monkeypatch, size):
    # A pattern without a scanner once listed all of a range's pre-tokens at once (~25 times
    # its text's bytes); they are counted in batches, a long piece matched lazily.
    from bpe_cffi import tally
    from bpe_cffi.patterns import pretokenizer
    pattern = r"\w+|\s+|[^\w\s]+|(x)y"  # a group: each pre-token is the whole match
    pre = pretokenizer(pattern)
    pieces = ["Hello, world  xy!\n", "", "a" * 70 + " b c " * 20, "xyz  \t"]
    batches = list(pre.pre_token_batches(pieces, size))
    assert [t for b in batches for t in b] == [t for p in pieces for t in pre.pre_tokens(p)]
    assert all(len(b) < 2 * size + max(map(len, pieces)) for b in batches)
    path = tmp_path / "c.txt"
    path.write_text("<|endoftext|>".join(pieces) * 30, encoding="utf-8")
    want = bpe_cffi.count_words(path, ["<|endoftext|>"], pattern=pattern, num_workers=1)
    monkeypatch.setattr(tally, "_REGEX_BATCH", size)
    for special in (["<|endoftext|>"], []):
        got = bpe_cffi.count_words(path, special, pattern=pattern, num_workers=1)
        if special:
            assert got == want
        else:
            assert got == reference.word_counts(path.read_text(encoding="utf-8"), (), pattern)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_units_split_on_the_way_count_as_at_the_end(real_text, tmp_path, monkeypatch, pattern):
    # Units all distinct where their pre-tokens are not (numbers, dotted names) grew the unit
    # table with the corpus; past a bound the units held are split and the table starts
    # afresh. The counts, and their order, are the same either way.
    from bpe_cffi import tally
    import random
    rng = random.Random(5)
    numbers = " ".join(str(rng.randrange(10**11, 10**12)) for _ in range(3000))
    names = " ".join(".".join(rng.choices(["foo", "bar", "Baz", "qux"], k=5)) for _ in range(2000))
    text = EOT.join([real_text[:100_000], numbers, names, real_text[100_000:200_000]])
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    docs = text.split(EOT)
    want = list(bpe_cffi.count_words(path, [EOT], pattern=pattern, num_workers=1).items())
    assert dict(want) == reference.word_counts(text, [EOT], bpe_cffi.PATTERNS[pattern])
    monkeypatch.setattr(tally, "_UNITS_MAX", 100)
    assert list(bpe_cffi.count_words(path, [EOT], pattern=pattern, num_workers=1).items()) == want
    got = bpe_cffi.count_words_from_iterator(iter(docs), [EOT], pattern=pattern, num_workers=1)
    assert got == dict(want)
