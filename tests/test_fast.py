"""The unit fast path (csrc/units.c): exact against the regex module, on every code point and
on strings built to break it; counting and encoding equal the plain path."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi._lib import ffi, lib
from bpe_cffi.pretokenize import find_all
from bpe_cffi.units import (Counter as UnitCounter, arrays_to_counts, char_classes, encode_gpt2,
                            encode_gpt2_list, encode_units)

import reference

EOT = "<|endoftext|>"
ODD = ["\u0085", "\u2028", "\u2029", "\u3000", "\u00a0", "\u1680", "\u2000", "\u200a",
       "\u202f", "\u205f", "\u001c", "\u001d", "\u001e", "\u001f", "\x0b", "\x0c", "\r\n",
       "\t", "\n", " ", "  ", "'s", "'ll", "'ve", "'re", "'d", "'m", "'t", "'S", "''", "'",
       "a", "Z", "é", "ß", "字", "١", "½", "²", "7", "🙂", "\u200d", "\x00", "\x7f", "!", "-",
       "“", "…", "ǅ", "\u0301", "x\u0301",
       # runs longer than the eight bytes the ASCII scan and the hash read at a time
       "abcdefghijkl", "0123456789", "~!@#$%^&*()_+", "Mixed9Case_and-dash", "\x1b\x7f"]
odd_text = st.lists(st.sampled_from(ODD), max_size=40).map("".join)
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


def test_whitespace_equals_regex_on_every_code_point():
    space = regex.compile(r"\s")
    wrong = [cp for cp in range(0x110000)
             if bool(lib.bpe_is_whitespace(cp)) != bool(space.match(chr(cp)))]
    assert wrong == []
    assert not lib.bpe_is_whitespace(0x1C)  # str.isspace says yes; regex's \s says no


def test_char_classes_agree_with_regex():
    classes = char_classes()
    for cp in list(range(0, 0x3000, 7)) + [0x3000, 0x10FFFF, 0x1F642, 0x0661, 0x00BD]:
        c = chr(cp)
        want = (0 if regex.match(r"\p{L}", c) else 1 if regex.match(r"\p{N}", c)
                else 2 if regex.match(r"\s", c) else 3)
        assert classes[cp] == want, hex(cp)


def c_split(text: str) -> list[str]:
    data = text.encode("utf-8")
    ends = np.empty(max(len(data), 1), np.int64)
    n = lib.bpe_gpt2_split(ffi.from_buffer(data), len(data), ffi.from_buffer(char_classes()),
                           0x110000, ffi.from_buffer("int64_t[]", ends))
    cuts = [0] + ends[:n].tolist()
    return [data[a:b].decode("utf-8") for a, b in zip(cuts, cuts[1:])]


@given(text=st.one_of(odd_text, any_text))
@settings(max_examples=300)
def test_c_split_equals_regex(text):
    assert c_split(text) == regex.findall(bpe_cffi.GPT2_PATTERN, text)


def test_c_split_on_invalid_bytes_stays_in_bounds():
    rng = np.random.default_rng(0)
    for _ in range(200):
        data = rng.integers(0, 256, rng.integers(1, 64), dtype=np.uint8).tobytes()
        ends = np.empty(len(data), np.int64)
        n = lib.bpe_gpt2_split(data, len(data), ffi.from_buffer(char_classes()), 0x110000,
                               ffi.from_buffer("int64_t[]", ends))
        assert 1 <= n <= len(data) and ends[n - 1] == len(data)
        assert (np.diff(ends[:n]) > 0).all()


@given(text=st.one_of(odd_text, any_text))
@settings(max_examples=300)
def test_units_are_whitespace_then_text(text):
    # Longer units would still count right (each is split by the pattern), just slower; so
    # this pins the unit boundaries themselves: a whitespace run, then a non-whitespace run.
    data = text.encode("utf-8")
    counter = UnitCounter()
    assert counter.add_units(data, [0], [len(data)])
    assert arrays_to_counts(counter.export()) == {
        u.encode("utf-8"): n for u, n in Counter(regex.findall(r"\s*\S+|\s+", text)).items()}


def unit_counts(data: bytes) -> dict[bytes, int] | None:
    """The C unit counts of UTF-8 bytes, or None if the C says they are not UTF-8."""
    counter = UnitCounter()
    return arrays_to_counts(counter.export()) if counter.add_units(data, [0], [len(data)]) \
        else None


# Offsets around the 64-byte blocks the scan reads at a time, so a character or a unit edge
# falls on each side of a block edge and across it.
EDGES = [p for b in (0, 64, 128) for p in range(max(b - 5, 0), b + 5)]


def test_unit_edges_across_blocks():
    wide = [c for c in ODD if len(c.encode("utf-8")) > 1] + ["\U0001F642\u3000"]
    wrong = []
    for pos in EDGES:
        for lead in ("x", " "):
            for c in wide:
                for tail in (" y", "y", "  ", c, c + "z", ""):
                    for end in ("", " end" * 20):  # the text ends in the last block, or later
                        text = lead * pos + c + tail + end
                        want = Counter(regex.findall(r"\s*\S+|\s+", text))
                        got = unit_counts(text.encode("utf-8"))
                        if got != {u.encode("utf-8"): n for u, n in want.items()}:
                            wrong.append((pos, lead, c, tail, end))
    assert wrong == []


@pytest.mark.parametrize("bad", [b"\xff", b"\x80", b"\xc3(", b"\xe2\x80 ", b"\xc0\xaf",
                                 b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe3\x80",
                                 b"\xe0\x80\xaf", b"\xe0\x9f\xbf"])  # overlong, 3 bytes
def test_invalid_utf8_found_at_every_block_offset(bad):
    for pos in EDGES:
        for lead in (b"x", b" "):
            assert unit_counts(lead * pos + bad + b" tail" * 30) is None, (pos, lead)
            assert unit_counts(lead * pos + bad) is None, (pos, lead)  # at the very end


@given(text=st.one_of(odd_text, any_text, st.lists(st.sampled_from(ODD + [EOT]), max_size=30)
                      .map("".join)))
@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_count_words_fast_equals_plain(tmp_path, text):
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    fast = bpe_cffi.count_words(path, [EOT], fast=True, num_workers=1)
    plain = bpe_cffi.count_words(path, [EOT], fast=False, num_workers=1)
    assert fast == plain == reference.word_counts(text, [EOT])


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_count_words_fast_equals_plain_on_real_text(realmix_head, tmp_path, workers):
    path = tmp_path / "real.txt"
    path.write_text(realmix_head, encoding="utf-8")
    fast = bpe_cffi.count_words(path, [EOT], fast=True, num_workers=workers)
    assert fast == bpe_cffi.count_words(path, [EOT], fast=False, num_workers=1)


def test_default_workers_on_the_fast_path(realmix_head, tmp_path, monkeypatch):
    # num_workers=None starts one process per FAST_BYTES_PER_WORKER of input (up to one per
    # core): a small input is counted without a pool, a larger one with one.
    from bpe_cffi import counting
    path = tmp_path / "real.txt"
    path.write_text(realmix_head, encoding="utf-8")
    want = bpe_cffi.count_words(path, [EOT], fast=False, num_workers=1)

    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool was started")

    with monkeypatch.context() as m:
        m.setattr(counting, "process_pool", no_pool)
        assert bpe_cffi.count_words(path, [EOT]) == want
        with pytest.raises(AssertionError, match="pool was started"):
            bpe_cffi.count_words(path, [EOT], num_workers=2)  # asked for: obeyed
        m.setattr(counting, "FAST_BYTES_PER_WORKER", 1 << 16)
        m.setattr(counting.os, "cpu_count", lambda: 2)
        with pytest.raises(AssertionError, match="pool was started"):
            bpe_cffi.count_words(path, [EOT])
    assert bpe_cffi.count_words(path, [EOT], fast=True) == want


def test_chunk_edges_with_trailing_whitespace(tmp_path):
    # Whitespace at chunk edges and at the end of the file, odd spaces everywhere.
    text = "".join(f"w{i}\u3000 \u0085x{i}  \n\t" + ("\u2028" if i % 3 else EOT)
                   for i in range(200_000)) + "  \n "
    path = tmp_path / "edges.txt"
    path.write_text(text, encoding="utf-8")
    fast = bpe_cffi.count_words(path, [EOT], fast=True, num_workers=2)
    assert fast == bpe_cffi.count_words(path, [EOT], fast=False, num_workers=1)


@given(text=st.one_of(odd_text, any_text))
@settings(max_examples=150)
def test_encode_fast_equals_plain(text):
    assert FAST.encode(text) == PLAIN.encode(text)


vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 800, [EOT])
FAST = bpe_cffi.Tokenizer(vocab, merges, [EOT], fast=True)
PLAIN = bpe_cffi.Tokenizer(vocab, merges, [EOT], fast=False)


def test_encode_fast_equals_plain_on_real_text(realmix_head):
    assert FAST.encode(realmix_head) == PLAIN.encode(realmix_head)


def units_way(data: bytes) -> list[int]:
    """The ids of data as one piece through the units (what texts over 64 KB take)."""
    return encode_units(FAST._encoder, data, [0], [len(data)], [-1]).tolist()


@given(text=st.one_of(odd_text, any_text, st.lists(st.sampled_from(ODD), max_size=300)
                      .map("".join)))
@settings(max_examples=200)
def test_short_text_way_equals_units_way(text):
    # Texts of up to 64 KB skip the units (bpe_encoder_encode_gpt2); longer ones scan them.
    data = text.encode("utf-8")
    assert encode_gpt2(FAST._encoder, data).tolist() == units_way(data)


@given(text=st.lists(st.sampled_from(ODD + [EOT, EOT, "<|endof", "text|>"]), max_size=60)
       .map("".join))
@settings(max_examples=200)
def test_short_text_way_with_specials_equals_units_way(text):
    data = text.encode("utf-8")
    starts, ends, found = FAST._byte_specials.few_spans(data)
    then_id = [FAST._special_id_of_bytes[f] for f in found] + [-1]
    assert (starts, ends, found) == tuple(
        x.tolist() if isinstance(x, np.ndarray) else x for x in FAST._byte_specials.spans(data))
    assert encode_gpt2(FAST._encoder, data, starts, ends, then_id).tolist() == \
        encode_units(FAST._encoder, data, starts, ends, then_id).tolist()


@given(text=st.lists(st.sampled_from(ODD + [EOT, EOT, "<|endof", "text|>", "<", "|>"]),
                     max_size=60).map("".join))
@settings(max_examples=200)
def test_short_text_way_cut_at_one_special_in_c(text):
    # With one special token, C finds it itself: the same ids as pieces found in Python.
    data = text.encode("utf-8")
    eot = EOT.encode()
    starts, ends, found = FAST._byte_specials.few_spans(data)
    then_id = [FAST.special_ids[EOT]] * len(found) + [-1]
    want = encode_gpt2(FAST._encoder, data, starts, ends, then_id).tolist()
    assert encode_gpt2(FAST._encoder, data, special=(eot, FAST.special_ids[EOT])).tolist() == want
    assert encode_gpt2_list(FAST._encoder, data, special=(eot, FAST.special_ids[EOT])) == want
    assert FAST.encode(text) == want


def test_short_text_way_on_real_text(realmix_head):
    data = realmix_head.encode("utf-8")
    for size in (1, 7, 100, 1000, 20_000, 300_000):
        for start in range(0, min(len(data), 40 * size), size):
            part = data[start:start + size]
            try:
                part.decode("utf-8")
            except UnicodeDecodeError:
                continue  # cut inside a character
            assert encode_gpt2(FAST._encoder, part).tolist() == \
                units_way(part), (size, start)


@pytest.mark.parametrize("bad", [b"\xff", b"\x80", b"\xc3(", b"\xe2\x80 ", b"\xc0\xaf",
                                 b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe3\x80",
                                 b"\xe0\x80\xaf", b"\xe0\x9f\xbf"])  # overlong, 3 bytes
def test_short_text_way_refuses_invalid_utf8(bad):
    for pos in range(0, 20):
        for lead in (b"x", b" "):
            for data in (lead * pos + bad + b" tail", lead * pos + bad):
                with pytest.raises(ValueError, match="UTF-8"):
                    encode_gpt2(FAST._encoder, data)


def test_fast_needs_gpt2_pattern(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a b")
    with pytest.raises(ValueError, match="fast=True"):
        bpe_cffi.count_words(path, pattern=r"\S+", fast=True)
    with pytest.raises(ValueError, match="fast=True"):
        bpe_cffi.Tokenizer(vocab, merges, pattern=r"\S+", fast=True)
    assert bpe_cffi.count_words(path, pattern=r"\S+") == {b"a": 1, b"b": 1}  # auto: plain


@given(data=st.binary(max_size=80).map(lambda b: bytes(x % 4 + 0x3c for x in b)),
       needle=st.sampled_from([b"<", b"<<", b"<=>", b"?<|>", b"==<|endoftext|>"]))
@settings(max_examples=300)
def test_find_all_equals_re(data, needle):
    import re
    want = [m.start() for m in re.finditer(re.escape(needle), data)]
    assert find_all(data, needle).tolist() == want


def test_find_all_resumes_past_its_buffer():
    data = b"ab" * 150_000  # more occurrences than one C call returns
    assert find_all(data, b"b").tolist() == list(range(1, len(data), 2))
    assert find_all(data, b"bab").tolist() == list(range(1, len(data) - 2, 4))


@pytest.mark.parametrize("words", [
    [], [b"a"], [b"", b"x", b"", b""], [b" the", b"\xe5\xad\x97", b"\n\n", b"'s"],
    [b"\xff", b"a\xffb", b"", b"c"],  # not UTF-8: the slicing path
])
def test_arrays_to_counts_round_trips(words):
    from bpe_cffi.units import counts_to_arrays
    counts = {w: i + 1 for i, w in enumerate(words)}
    assert arrays_to_counts(counts_to_arrays(counts)) == counts


def test_counter_tells_apart_words_alike_in_their_first_bytes():
    # The table's slots hold a word's first sixteen bytes, zero-padded: words that differ only
    # past them, only in length or only in trailing zero bytes must stay apart.
    from bpe_cffi.units import counts_to_arrays
    words = [b"", b"\x00", b"\x00\x00", b"a", b"a\x00"]
    for n in (7, 8, 9, 15, 16, 17, 23, 24, 25, 40):
        base = bytes(range(65, 65 + n))
        words += [base, base + b"\x00", base[:-1] + b"!", b"!" + base[1:]]
    # Hundreds alike in all sixteen bytes and the length, so some share a probe chain.
    words += [b"sixteen bytes..." + bytes([b]) + end for b in range(256) for end in (b"", b"z")]
    words = list(dict.fromkeys(words))
    counts = {w: i + 1 for i, w in enumerate(words)}
    counter = UnitCounter()
    for _ in range(3):  # again and again, so every word is also found, not only inserted
        counter.add(*counts_to_arrays(counts))
    assert arrays_to_counts(counter.export()) == {w: 3 * c for w, c in counts.items()}


@pytest.mark.parametrize("words", [[], [b"a"], [b"a", b"\xff\xfe", b"b"], [b"\xff"], [b" x", b"yz"]])
def test_counter_to_dict(words):
    # count_words' dict comes from one split on 0xFF separators; a word holding 0xFF (never
    # from UTF-8 text) takes the slicing path instead.
    from bpe_cffi.units import counts_to_arrays
    counts = {w: i + 2 for i, w in enumerate(words)}
    counter = UnitCounter()
    counter.add(*counts_to_arrays(counts))
    got = counter.to_dict()
    assert got == counts and list(got) == words


@pytest.mark.parametrize("text", ["the cat and the", "the cat and the hat",
                                  "the cat and the hat zqxj", "the cat and the hat zqxjkvwpq",
                                  "the cat " + EOT, "the cat and the hat  ", "a"])
def test_units_encode_into_exactly_the_room_they_need(text):
    # The output loop writes a one- or two-id unit as two ids (it keeps one or two): at the very
    # end of the ids' room it must write only what fits. Units ending in one id, two and more,
    # a special and whitespace; sanitize.sh runs this under AddressSanitizer.
    from bpe_cffi.units import encode_scanned, scan_units
    data = text.encode()
    want = FAST.encode_to_numpy(text).tolist()
    starts, ends, then_id = FAST._pieces(data)

    def encoded(room):
        return encode_scanned(FAST._encoder, scan_units(data, starts, ends, then_id), room)

    assert encoded(len(want)).tolist() == want
    with pytest.raises(ValueError, match="invalid arguments"):
        encoded(len(want) - 1)


def random_words(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyzéßж") for _ in
                            range(rng.randint(3, 9))) for _ in range(n))


def test_slot_caches_keep_blocks_and_change_no_id():
    # 40 000 distinct units grow a text's unit and pre-token tables past 4 MB of slots, from
    # which a Tokenizer's slot cache keeps the blocks for its next encode: texts encoded one
    # after another, larger and smaller, reuse them (a small text leaves them be), and every
    # id stays the plain path's.
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=1)
    big = [random_words(seed, 40_000) + EOT + random_words(seed + 9, 100) for seed in (1, 2)]
    small = big[1][:100_000]
    for text in big + [small] + big:
        assert tok.encode(text) == PLAIN.encode(text)
        held = [lib.bpe_slot_cache_held(c) for c in tok._slot_caches._free]
        assert len(held) == 1 and held[0] >= 8 << 20
    assert tok.encode_batch(big) == [PLAIN.encode(t) for t in big]
    # Two threads, each part's tables past 4 MB: a cache each while both run (one, if the
    # first part is done before the second starts), lent and taken back at once.
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8)
    words = letters[rng.integers(0, 26, 4_000_000)].reshape(-1, 8)
    words[:, 0] = ord(" ")
    long_text = words.tobytes().decode()  # 4 MB: three parts of ~166 000 distinct words
    two = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=2)
    want = PLAIN.encode(long_text)
    assert two.encode(long_text) == want and two.encode(long_text) == want
    assert len(two._slot_caches._free) in (1, 2)
    capped = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=1)
    capped._slot_caches.MAX_HELD = 4 << 20  # less than a text's blocks: none is kept
    assert capped.encode(big[0]) == PLAIN.encode(big[0])
    assert capped._slot_caches._free == []


def test_c_handles_refuse_use_after_they_are_freed():
    # The unit table and the counters are C memory that a call frees; using one again must be
    # a Python error, never a read of freed memory (it used to abort the interpreter).
    from bpe_cffi.units import encode_scanned, scan_units
    data = "the cat and the hat ".encode() * 50
    units = scan_units(data, [0], [len(data)], [-1])
    ids = encode_scanned(FAST._encoder, units, len(data) + 1)
    assert ids.tolist() == FAST.encode_to_numpy(data.decode()).tolist()
    with pytest.raises(ValueError, match="already encoded"):
        encode_scanned(FAST._encoder, units, len(data) + 1)
    counter = UnitCounter()
    counter.add_units(data, [0], [len(data)])
    counter.release()
    counter.release()  # twice: nothing more happens
    for use in (lambda: counter.to_dict(), lambda: counter.export(),
                lambda: counter.add_units(data, [0], [len(data)])):
        with pytest.raises(ValueError, match="released"):
            use()
