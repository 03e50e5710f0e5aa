"""The C scanners (csrc/scan*.c) and units (csrc/units.c): exact against the regex module on
every code point, on strings built to break them, and on real text."""
from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np
import pytest
import regex
from hypothesis import example, given, settings, strategies as st

import bpe_cffi
from bpe_cffi._lib import ffi, lib
from bpe_cffi.counter import WordCounter, arrays_to_counts
from bpe_cffi.patterns import (BASE, CASES, CLASS_TABLE_FILE, FOLDS, PATTERNS, _KNOWN,
                               char_classes, compute_char_classes, pretokenizer,
                               read_class_table, write_class_table)
from bpe_cffi.specials import SpecialTokens

EOT = "<|endoftext|>"
# Every published pattern with a C scanner, and a sample of the equivalent forms recognised as
# theirs, each checked against the regex module itself.
KNOWN = list(PATTERNS.values()) + random.Random(0).sample(
    sorted(set(_KNOWN) - set(PATTERNS.values())), 8) + [
    pretokenizer("cl100k_tiktoken").family.hf_pattern]  # \s+\Z for \s+$: tokenizer.json's
# One pattern per way of cutting units (csrc/units.h): the cut depends on the family only.
FAMILIES = [PATTERNS[name] for name in ("gpt2", "cl100k", "o200k")]

ODD = ["\u0085", "\u2028", "\u2029", "\u3000", "\u00a0", "\u1680", "\u2000", "\u200a",
       "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008",
       "\u2009", "\u202f", "\u205f", "\u0903", "\u20dd", "k\u0903", "\u2003\n", " \n/",
       "\u001c", "\u001d", "\u001e", "\u001f", "\x0b", "\x0c", "\r\n",
       "\r", "\t", "\n", "\n\n", " ", "  ", "'s", "'ll", "'ve", "'re", "'d", "'m", "'t", "'S",
       "'LL", "'Ve", "'ſ", "''", "'", "a", "Z", "é", "ß", "字", "ǅ", "ʰ", "\u0301",
       "x\u0301", "\u0301x", "A\u0301b", "١", "½", "²", "Ⅻ", "7", "12", "1234", "🙂", "\u200d",
       "\x00", "\x7f", "!", "-", ".", "/", "“", "…", "$", "«",
       # runs longer than the eight bytes the ASCII scan and the hash read at a time
       "abcdefghijkl", "ABCdef", "0123456789", "~!@#$%^&*()_+", "Mixed9Case_and-dash", "\x1b"]
odd_text = st.lists(st.sampled_from(ODD), max_size=40).map("".join)
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


def c_split(pattern: str, text: str) -> list[str]:
    """The C scanner's pre-tokens of text."""
    data = text.encode("utf-8")
    ends = np.empty(max(len(data), 1), np.int64)
    n = ffi.new("int64_t *")
    rc = lib.bpe_scanner_split(pretokenizer(pattern).scanner, data, len(data),
                               ffi.from_buffer("int64_t[]", ends), len(ends), n)
    assert rc == lib.BPE_OK
    cuts = [0] + ends[:n[0]].tolist()
    return [data[a:b].decode("utf-8") for a, b in zip(cuts, cuts[1:])]


def test_whitespace_equals_regex_on_every_code_point():
    space = regex.compile(r"\s")
    wrong = [cp for cp in range(0x110000)
             if bool(lib.bpe_is_whitespace(cp)) != bool(space.match(chr(cp)))]
    assert wrong == []
    assert not lib.bpe_is_whitespace(0x1C)  # str.isspace says yes; regex's \s says no


def test_class_table_equals_regex_on_every_code_point():
    # Each class the scanners read (csrc/scan.h), against regex on all 1 114 112 code points.
    every = "".join(map(chr, range(0x110000)))
    classes = char_classes()
    base, case, fold = classes & 3, classes & 12, classes >> 4

    def members(pattern):
        got = np.zeros(0x110000, bool)
        for m in regex.finditer(pattern, every):
            got[m.start()] = True
        return got

    letter, other = base == 0, base == 3
    assert np.array_equal(letter, members(r"\p{L}"))
    assert np.array_equal(base == 1, members(r"\p{N}"))
    assert np.array_equal(base == 2, members(r"\s"))
    assert np.array_equal(letter & (case == 0), members(r"[\p{Lu}\p{Lt}]"))
    assert np.array_equal(letter & (case == 4), members(r"\p{Ll}"))
    assert np.array_equal(letter & (case == 8), members(r"[\p{Lm}\p{Lo}]"))
    assert np.array_equal(other & (case == 4), members(r"\p{M}"))
    assert not (case[~(letter | other)].any() or (other & (case > 4)).any())
    upper = (letter & ((case == 0) | (case == 8))) | (other & (case == 4))
    lower = (letter & ((case == 4) | (case == 8))) | (other & (case == 4))
    assert np.array_equal(upper, members(r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"))
    assert np.array_equal(lower, members(r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"))
    for f, ch in enumerate("sdmtlver", 1):
        assert np.array_equal(fold == f, members(f"(?i:{ch})")), ch
    assert fold[ord("ſ")] == 1  # the long s matches s without case, as regex has it


@pytest.mark.parametrize("level", [BASE, FOLDS, CASES])
def test_class_table_of_each_level_equals_the_computed_one(level):
    # The shipped table (when it names the installed regex) cut to a level's bits.
    assert np.array_equal(char_classes(level), compute_char_classes(level))


def test_shipped_class_table_is_the_installed_regexs():
    with open(CLASS_TABLE_FILE, "rb") as f:
        head = f.readline()
    if regex.__version__.encode() not in head:
        pytest.skip(f"{head!r} is not for regex {regex.__version__}: the table is computed at "
                    "start-up (scripts/char_classes.py writes a new file)")
    assert np.array_equal(read_class_table(), compute_char_classes(CASES))


def test_class_table_file_round_trip_and_damage(tmp_path):
    path = str(tmp_path / "classes.bin")
    write_class_table(path)
    assert np.array_equal(read_class_table(path), compute_char_classes(CASES))
    data = open(path, "rb").read()
    head, _, body = data.partition(b"\n")
    damaged = {
        "another regex": head + b".1\n" + body,
        "truncated": data[:-1],
        "no runs": head + b"\n",
        "runs that do not cover Unicode": head + b"\n" + np.array([1, 5, 0], "<u4").tobytes()[:8]
        + b"\x00",
    }
    for name, bad in damaged.items():
        open(path, "wb").write(bad)
        assert read_class_table(path) is None, name
    assert read_class_table(str(tmp_path / "missing.bin")) is None


@pytest.mark.parametrize("pattern", KNOWN)
@given(text=st.one_of(odd_text, any_text))
@settings(max_examples=300)
def test_c_split_equals_regex(pattern, text):
    assert c_split(pattern, text) == regex.findall(pattern, text)


@pytest.mark.parametrize("pattern", KNOWN)
def test_c_split_equals_regex_on_real_text(pattern, real_text):
    assert c_split(pattern, real_text) == regex.findall(pattern, real_text)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", list(PATTERNS.values()))  # the published forms: slow
def test_c_split_on_each_code_point_between_letters(pattern):
    # Every code point, alone and between the characters a pattern treats apart.
    for cp in range(0, 0x110000, 1):
        if 0xD800 <= cp < 0xE000 or (cp > 0x3000 and cp % 97):
            continue  # every one up to U+3000, then a sample of the rest
        c = chr(cp)
        for text in (c, "a" + c + "b", " " + c + "\n", "'" + c, "1" + c + c + "2"):
            assert c_split(pattern, text) == regex.findall(pattern, text), hex(cp)


def test_split_refuses_invalid_utf8():
    ends = np.empty(8, np.int64)
    n = ffi.new("int64_t *")
    assert lib.bpe_scanner_split(pretokenizer("gpt2").scanner, b"ab\xff", 3,
                                 ffi.from_buffer("int64_t[]", ends), 8, n) == lib.BPE_EUTF8


def unit_counts(pattern: str, data: bytes) -> dict[bytes, int] | None:
    """The C unit counts of UTF-8 bytes, or None if the C says they are not UTF-8."""
    counter = WordCounter()
    ok = counter.add_units(pretokenizer(pattern).scanner, data, [0], [len(data)])
    return arrays_to_counts(counter.export()) if ok else None


SPACES = set(regex.findall(r"\s", "".join(map(chr, range(0x3001)))))
LETTER_OR_NUMBER = regex.compile(r"[\p{L}\p{N}]")


def reference_cuts(pattern: str, text: str) -> list[int]:
    """Where csrc/units.h says units are cut, in Python: before whitespace after
    non-whitespace, but in cl100k's and o200k's families not before \r or \n after what is
    neither a letter nor a number, and there also after \r or \n before non-whitespace (but
    o200k's /)."""
    family = pretokenizer(pattern).family.name
    space = [c in SPACES for c in text]
    cuts = []
    for i in range(1, len(text)):
        before, c = text[i - 1], text[i]
        if not space[i - 1] and space[i]:
            if family == "gpt2" or c not in "\r\n" or LETTER_OR_NUMBER.match(before):
                cuts.append(i)
        elif family != "gpt2" and before in "\r\n" and not space[i]:
            if not (family == "o200k" and c == "/"):
                cuts.append(i)
    return cuts


def reference_units(pattern: str, text: str) -> Counter:
    """The units csrc/units.h describes (reference_cuts), counted."""
    cuts = [0] + reference_cuts(pattern, text) + [len(text)]
    return Counter(text[a:b] for a, b in zip(cuts, cuts[1:]) if b > a)


def expected_units(pattern, text):
    return {u.encode("utf-8"): n for u, n in reference_units(pattern, text).items()}


@pytest.mark.parametrize("pattern", FAMILIES)
@given(text=st.one_of(odd_text, any_text))
@settings(max_examples=300)
def test_units_are_cut_as_documented(pattern, text):
    # Longer units would still count right (each is split by the pattern), only slower; so
    # this pins the unit edges themselves.
    assert unit_counts(pattern, text.encode("utf-8")) == expected_units(pattern, text)


@pytest.mark.parametrize("pattern", FAMILIES)
@given(text=st.one_of(odd_text, any_text))
@example(text="a\n/b .\n/c")  # o200k's punctuation takes the / after a line break
@example(text="字\n字。\n「x \u3000y\u3000 z\u2028 w")
@settings(max_examples=300)
def test_safe_edges_are_unit_cuts(pattern, text):
    # Files, long texts and streams are cut on the family's edges (chunking.Edges): on str,
    # every unit cut beside ASCII whitespace, in any script; on UTF-8 the same, but a letter
    # or number before a line break is told on ASCII alone.
    edges = pretokenizer(pattern).edges
    gpt2 = pretokenizer(pattern).family.name == "gpt2"
    on_str = {m.start() for m in regex.finditer(edges.text, text)}
    assert on_str == {i for i in reference_cuts(pattern, text)
                      if text[i] in "\t\n\x0b\x0c\r " or text[i - 1] in "\r\n"}
    char_at = {len(text[:i].encode()): i for i in range(len(text) + 1)}
    on_utf8 = {char_at[m.start()] for m in regex.finditer(edges.utf8, text.encode())}
    assert on_utf8 == {i for i in on_str
                       if gpt2 or text[i] not in "\r\n" or text[i - 1].isascii()}


# Characters around the edges: each kind of ASCII whitespace, '/', letters and digits, the
# whitespace outside ASCII (their UTF-8 is what csrc/edges.c spells out) and their neighbours.
EDGE_CHARS = ("a", "Z", "0", " ", "\t", "\n", "\r", "\x0b", "\x0c", "/", ".", "\x00", "\x1f", "é",
              "\u0085", "\u00a0", "\u00a1", "\u1680", "\u1681", "\u2000", "\u200a", "\u200b",
              "\u2028", "\u2029", "\u202f", "\u205f", "\u2060", "\u3000", "\u3001", "字", "🙂")
EDGE_BYTES = bytes([0x00, 0x09, 0x0A, 0x0D, 0x20, 0x2F, 0x41, 0x7F, 0x80, 0x81, 0x85, 0x8A,
                    0x8B, 0x9A, 0x9F, 0xA0, 0xA8, 0xAF, 0xBF, 0xC0, 0xC2, 0xE1, 0xE2, 0xE3,
                    0xF0, 0xF4, 0xF5, 0xFF])


@pytest.mark.parametrize("pattern", FAMILIES)
@given(data=st.one_of(st.lists(st.sampled_from(EDGE_CHARS), max_size=14).map(
                          lambda cs: "".join(cs).encode()),
                      st.lists(st.sampled_from(EDGE_BYTES), max_size=12).map(bytes)),
       bounds=st.tuples(st.integers(0, 40), st.integers(0, 40)))
@settings(max_examples=500)
def test_edges_in_c_are_the_edge_regexs(pattern, data, bounds):
    # bpe_next_edge finds on bytes what the family's edge regex finds there (from lo, the
    # regex reading up to limit, as chunking.Edges runs it), any bytes, UTF-8 or not.
    edges = pretokenizer(pattern).edges
    lo = min(bounds[0], len(data))
    hi = min(max(lo, bounds[1]), len(data))
    limit = min(len(data), hi + 2)
    want = next((m.start() for m in regex.finditer(edges.utf8, data, pos=lo, endpos=limit)
                 if 0 < m.start() < hi), -1)
    at = ffi.new("int64_t *")
    assert lib.bpe_next_edge(edges.code, data, limit, lo, hi, at) == lib.BPE_OK
    assert at[0] == want


@pytest.mark.parametrize("pattern", FAMILIES)
def test_text_without_ascii_beside_its_line_breaks_has_edges(pattern, tmp_path):
    # Japanese lines end in 。 or 」 with no space: with edges only between ASCII characters,
    # such a file was one range for one process, and encode_iterable read a whole stream of
    # it before its first id.
    from bpe_cffi.chunking import Edges, plan_file
    r = random.Random(0)
    kana = [chr(c) for c in range(0x3041, 0x3097)] + list("日本語文章東京大学研究「")
    lines = ["".join(r.choices(kana, k=r.randint(5, 40))) + r.choice(["。", "」", "！"]) + "\n"
             for _ in range(20_000)]
    path = tmp_path / "ja.txt"
    path.write_text("".join(lines), encoding="utf-8")
    ranges = plan_file(str(path), Edges([], pretokenizer(pattern).edges), 1 << 18)
    assert len(ranges) > 4
    read = 0

    def stream():
        nonlocal read
        for line in lines:
            read += len(line)
            yield line

    vocab, merges = bpe_cffi.train_bpe(str(path), 1000, pattern=pattern)
    tok = bpe_cffi.Tokenizer(vocab, merges, pattern=pattern, num_threads=3)
    ids = iter(tok.encode_iterable(stream()))
    first = next(ids)
    assert read < len("".join(lines)) // 4
    # The ids are those of the regex path, which has no such edges
    want = bpe_cffi.Tokenizer(vocab, merges, pattern="(?:" + pattern + ")").encode(
        "".join(lines))
    assert [first, *ids] == want
    assert tok.encode_to_numpy("".join(lines * 2)).tolist() == want * 2  # parts for threads
    tok.encode_file(str(path), str(tmp_path / "ja.npy"), num_workers=2)
    assert np.load(tmp_path / "ja.npy").tolist() == want


# Offsets around the 64-byte blocks the scan reads at a time, so a character or a unit edge
# falls on each side of a block edge and across it.
EDGES = [p for b in (0, 64, 128) for p in range(max(b - 5, 0), b + 5)]


@pytest.mark.slow
@pytest.mark.parametrize("pattern", FAMILIES)
def test_unit_edges_across_blocks(pattern):
    wide = [c for c in ODD if len(c.encode("utf-8")) > 1] + ["\U0001F642\u3000", "\r\n"]
    wrong = []
    for pos in EDGES:
        for lead in ("x", " ", "."):
            for c in wide:
                for tail in (" y", "y", "  ", c, c + "z", "\ny", ""):
                    for end in ("", " end" * 20):  # the text ends in the last block, or later
                        text = lead * pos + c + tail + end
                        if unit_counts(pattern, text.encode()) != expected_units(pattern, text):
                            wrong.append((pos, lead, c, tail, end))
    assert wrong == []


BAD = [b"\xff", b"\x80", b"\xc3(", b"\xe2\x80 ", b"\xc0\xaf", b"\xed\xa0\x80",
       b"\xf4\x90\x80\x80", b"\xe3\x80", b"\xe0\x80\xaf", b"\xe0\x9f\xbf"]  # overlong, 3 bytes


@pytest.mark.parametrize("bad", BAD)
def test_invalid_utf8_found_at_every_block_offset(bad):
    for pattern in FAMILIES + [r"\S+"]:
        for pos in EDGES:
            for lead in (b"x", b" ", b"\n"):
                assert unit_counts(pattern, lead * pos + bad + b" tail" * 30) is None, pos
                assert unit_counts(pattern, lead * pos + bad) is None, pos  # at the very end


def specials_by_regex(data: bytes, specials: list[bytes]) -> list[tuple[int, int]]:
    """(start, end) of specials in data by a regex alternation of them, longest first."""
    alternation = b"|".join(map(re.escape, sorted(specials, key=len, reverse=True)))
    return [m.span() for m in re.finditer(alternation, data)]


def specials_by_c(data: bytes, specials: list[bytes]) -> list[tuple[int, int]]:
    found = SpecialTokens([s.decode() for s in specials])
    at, which = found.find(data)
    return list(zip(at.tolist(), (at + found._needle_lengths[which]).tolist()))


@given(data=st.lists(st.sampled_from([b"<", b"=", b">", b"?", b"|", b"<|endoftext|>",
                                      b"==<|endo", b"ftext|>", b"<=>", b"?<|>"]),
                         max_size=40).map(b"".join),
       specials=st.lists(st.sampled_from([b"<", b"<<", b"<=>", b"?<|>", b"==<|endoftext|>",
                                          b"=", b"<==", b"<|", b"|>", b"??<"]),
                         min_size=1, max_size=4, unique=True))
@settings(max_examples=500)
def test_special_search_equals_a_regex_alternation(data, specials):
    # Leftmost, then longest there, then on after it: one special (memchr), several sharing
    # a first byte (memchr) and several that do not (a table of first bytes).
    assert specials_by_c(data, specials) == specials_by_regex(data, specials)


@given(data=st.binary(max_size=120).map(lambda b: bytes(b"<|ab"[x % 4] for x in b)),
       specials=st.lists(st.text(alphabet="<|ab", min_size=1, max_size=5).map(str.encode),
                         min_size=1, max_size=40, unique=True))
@settings(max_examples=500)
def test_special_search_among_many_sharing_their_first_bytes(data, specials):
    # A candidate whose first two bytes begin no special is passed over: specials of one
    # byte, a candidate at the last byte, many specials with the same first two bytes.
    assert specials_by_c(data, specials) == specials_by_regex(data, specials)


@given(text=st.text(alphabet="<=>?|é字🙂", max_size=60),
       specials=st.lists(st.sampled_from(["<", "<<", "<=>", "é", "é<", "字|>", "🙂", "?🙂?",
                                          "|"]), min_size=2, max_size=4, unique=True))
@settings(max_examples=300)
def test_special_search_in_str_equals_a_regex_alternation(text, specials):
    # The regex path finds specials in a str through its UTF-8: character offsets.
    alternation = "|".join(map(re.escape, sorted(specials, key=len, reverse=True)))
    want = [m.span() for m in re.finditer(alternation, text)]
    assert list(SpecialTokens(specials)._str_spans(text)) == want
    with_surrogate = "\ud800" + text  # which a pattern may leave out: no error, as with one
    assert list(SpecialTokens(specials)._str_spans(with_surrogate)) == \
        [(a + 1, b + 1) for a, b in want]


def test_special_search_resumes_past_its_buffer():
    data = b"ab" * 150_000  # more occurrences than one C call returns
    assert specials_by_c(data, [b"b"]) == [(i, i + 1) for i in range(1, len(data), 2)]
    assert specials_by_c(data, [b"bab"]) == [(i, i + 3) for i in range(1, len(data) - 2, 4)]
    assert specials_by_c(data, [b"a", b"ba"]) == specials_by_regex(data, [b"a", b"ba"])


def test_pattern_names_and_recognition():
    assert bpe_cffi.PATTERNS["gpt2"] == bpe_cffi.GPT2_PATTERN
    assert pretokenizer("gpt2").name == pretokenizer(bpe_cffi.GPT2_PATTERN).name == "gpt2"
    # A pattern that means the same but is written otherwise is not recognised: the regex
    # module splits it, to the same pre-tokens.
    other = "(?:" + bpe_cffi.GPT2_PATTERN + ")"
    assert pretokenizer(other).name == "regex"
    with pytest.raises(ValueError, match="invalid pre-tokenization pattern"):
        pretokenizer("(unclosed")
    with pytest.raises(TypeError, match="pattern must be a str"):
        pretokenizer(3)


def test_a_pattern_the_regex_module_runs_out_of_memory_on_is_a_value_error(monkeypatch):
    # It expands nested counted repeats: "(?:(?:a{1000}){1000}){1000}|." (30 characters)
    # took 2.3 GB before a MemoryError with no message.
    def compile_(pattern, *args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(regex, "compile", compile_)
    with pytest.raises(ValueError, match=re.escape("pattern '(?:a{1000}){1000}' takes more "
                                                   "memory to compile than could be had")):
        pretokenizer("(?:a{1000}){1000}")
