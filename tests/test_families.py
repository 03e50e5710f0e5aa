"""Every pattern family with a C scanner, end to end: training exact to the reference, counts
equal to the regex module's path for any number of workers, ids equal to tiktoken's and to
Hugging Face tokenizers' with the same pattern and ranks."""
from __future__ import annotations

import json

import pytest
import regex
import tiktoken
import tokenizers
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import PATTERNS, Tokenizer
from bpe_cffi.patterns import pretokenizer

import reference

EOT = "<|endoftext|>"
NAMES = list(PATTERNS)
# Text rich in what the families cut differently: case changes, marks, digits of every kind,
# contractions in every case, line breaks after punctuation, / after line breaks, trailing
# whitespace.
PIECES = ["the", " The", "THE", "tHe", "ǅemal", " naïve", "e\u0301", "\u0301", "日本語",
          "ʰʲ", "don't", "DON'T", "We'Ll", "'s", "'S", "'ſ", "12345", " 1234567", "١٢٣",
          "Ⅻ", "½", ".", "...", "!\n", ".\r\n", "\n/", "/x", "./\n/", "\n\n", " \n ", "\t",
          "\u00a0", "\u3000", "  ", " ", "x", "é", "🙂", "(", "--", "\r", "$", "a/b", EOT,
          # every other White_Space character, a spacing and an enclosing mark
          "\x0b", "\x0c", "\x85", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004",
          "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029",
          "\u202f", "\u205f", "\u0903", "k\u0903", "\u20dd",
          # whitespace before a line break (\s*[\r\n], and \s++$ at the end), a / after one,
          # digits of every kind in one run
          "\u2003\n", " \n", " \n/", "١½23"]
family_text = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


def regex_path(pattern: str) -> str:
    """The same pattern, written so that no scanner recognises it: the regex module splits."""
    return "(?:" + pattern + ")"


@pytest.fixture(scope="module")
def trained(real_text):
    """A 2 000-token vocabulary per family, trained on the real text."""
    import os
    import tempfile
    out = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "real.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(real_text)
        for name in NAMES:
            out[name] = bpe_cffi.train_bpe(path, 2000, [EOT], pattern=name)
    return out


def tiktoken_for(name, vocab, merges):
    return tiktoken.Encoding(f"test_{name}", pat_str=PATTERNS[name],
                             mergeable_ranks={vocab[i]: i for i in range(256 + len(merges))},
                             special_tokens={EOT: 256 + len(merges)})


@pytest.mark.parametrize("name", NAMES)
def test_training_follows_the_reference(name, real_text, tmp_path):
    text = real_text[:40_000]
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    _, merges = bpe_cffi.train_bpe(path, 256 + 1 + 120, [EOT], pattern=name, num_workers=1)
    assert merges == reference.train_text(text, 256 + 1 + 120, [EOT], PATTERNS[name])[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_counts_equal_the_regex_path(name, workers, real_text, tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(real_text * 4, encoding="utf-8")  # 1.7 MB: a chunk or two per worker
    got = bpe_cffi.count_words(path, [EOT], pattern=name, num_workers=workers)
    assert got == bpe_cffi.count_words(path, [EOT], pattern=regex_path(PATTERNS[name]),
                                       num_workers=1)


@pytest.mark.parametrize("name", NAMES)
@given(text=family_text)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_counts_equal_the_reference(name, tmp_path, text):
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("utf-8"))
    got = bpe_cffi.count_words(path, [EOT], pattern=name, num_workers=1)
    assert got == reference.word_counts(text, [EOT], PATTERNS[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_real_text_ids_equal_tiktoken(name, trained, real_text):
    vocab, merges = trained[name]
    tok = Tokenizer(vocab, merges, [EOT], pattern=name)
    assert tok.pretokenizer.family is not None
    encoding = tiktoken_for(name, vocab, merges)
    want = encoding.encode(real_text, allowed_special="all")
    assert tok.encode(real_text) == want
    assert tok.encode_to_numpy(real_text).tolist() == want
    docs = real_text.split("\n")
    assert tok.encode_batch(docs) == [encoding.encode(d, allowed_special="all") for d in docs]


@pytest.mark.parametrize("name", NAMES)
@given(text=family_text)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_ids_equal_tiktoken_and_the_regex_path(name, trained, text):
    vocab, merges = trained[name]
    tok = Tokenizer(vocab, merges, [EOT], pattern=name)
    want = tiktoken_for(name, vocab, merges).encode(text, allowed_special="all")
    assert tok.encode(text) == want
    assert Tokenizer(vocab, merges, [EOT], pattern=regex_path(PATTERNS[name])).encode(text) == want
    assert tok.encode_batch([text, text[::-1]])[0] == want


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_streams_and_threads_cut_safely(name, trained, real_text):
    # Over 2 MB a text is cut on the family's safe edges for threads; encode_iterable cuts the
    # stream on them. Lines ending in punctuation, / after line breaks, trailing whitespace.
    vocab, merges = trained[name]
    text = (real_text + ".\n/x\r\n. \n\t(\n") * 6
    one = Tokenizer(vocab, merges, [EOT], pattern=name, num_threads=1)
    many = Tokenizer(vocab, merges, [EOT], pattern=name, num_threads=3)
    want = one.encode_to_numpy(text).tolist()
    assert many.encode_to_numpy(text).tolist() == want
    lines = text.splitlines(keepends=True)
    assert list(many.encode_iterable(lines)) == want
    assert list(many.encode_iterable(text[i:i + 1000] for i in range(0, len(text), 1000))) == want


@pytest.mark.parametrize("name", ["cl100k", "cl100k_tiktoken", "cl100k_hf", "qwen2",
                                  "nanochat", "o200k"])
def test_tokenizer_json_loads_in_hf_tokenizers(name, trained, real_text, tmp_path):
    # tokenizer.json carries a form of the pattern that tokenizers reads as regex does (its $
    # ended every line: whitespace before a line break inside the text split otherwise).
    vocab, merges = trained[name]
    bpe_cffi.save(vocab, merges, tmp_path, [EOT], name)
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = Tokenizer.load(tmp_path)
    assert ours.pretokenizer.family.name == Tokenizer(vocab, merges, [EOT], name) \
        .pretokenizer.family.name
    text = real_text[:60_000]
    assert hf.encode(text).ids == ours.encode(text)


@pytest.mark.parametrize("name, spelling, read_alike", [
    ("cl100k_tiktoken", PATTERNS["cl100k_tiktoken"], False),  # \p{N}{1,3}+ and \s++$
    ("cl100k_tiktoken", PATTERNS["cl100k_tiktoken"].replace("{1,3}+", "{1,3}"), True),
    ("cl100k_tiktoken", PATTERNS["cl100k_tiktoken"].replace("{1,3}+", "{1,3}")
     .replace(r"\s++$", r"\s+$"), False),
    ("nanochat", PATTERNS["nanochat"].replace("{1,2}", "{1,2}+"), False),
    ("gpt2", PATTERNS["gpt2_tiktoken"], True),  # \s++$ gives back no line break
    ("gpt2", PATTERNS["gpt2_tiktoken"].replace(r"\s++$", r"\s+$"), False)])
def test_tokenizer_json_spelling_a_family_as_tokenizers_reads_otherwise(
        name, spelling, read_alike, trained, tmp_path):
    # A Split regex that spells a family's pattern is loaded as that family only in a form
    # tokenizers (Oniguruma) reads alike: it takes \p{N}{1,3}+ for (\p{N}{1,3})+, and the $
    # of \s+$ for the end of any line. In another, the file loaded as the family, silently
    # splitting otherwise than tokenizers; it is refused.
    vocab, merges = trained[name]
    bpe_cffi.save(vocab, merges, tmp_path, [EOT], "cl100k")
    path = tmp_path / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = spelling
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert pretokenizer(spelling).family.name == name
    text = "in 1234567 ways  \n\nit's  \n x \n"
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(spelling), "isolated")
    pieces = [piece for piece, _ in split.pre_tokenize_str(text)]
    assert (pieces == regex.findall(spelling, text)) == read_alike
    hf = tokenizers.Tokenizer.from_file(str(path))
    if not read_alike:
        with pytest.raises(ValueError, match=r"tokenizer\.json: the Split regex is the "
                                             f"{name} pattern with '.*', which tokenizers"):
            Tokenizer.load(tmp_path)
        return
    ours = Tokenizer.load(tmp_path)
    assert ours.pretokenizer.family.name == name
    assert hf.encode(text).ids == ours.encode(text)
