"""Loading fast (files.MergeParts, csrc/merge_ids.c): the bulk paths give what a token-by-token
reading gives, and every malformed file still gets an error that names what is wrong."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings, strategies as st

import bpe_cffi
from bpe_cffi import Tokenizer, files
from bpe_cffi.encoder import merge_ids

EOT = "<|endoftext|>"


def reference_merge_ids(vocab: dict[int, bytes], merges):
    """Merge ids looked up one by one; a byte string listed twice has its lowest id."""
    token_to_id = {}
    for i in sorted(vocab):
        token_to_id.setdefault(vocab[i], i)
    out = []
    for r, (a, b) in enumerate(merges):
        for k, token in enumerate((a, b, a + b)):
            if token not in token_to_id:
                return ("missing", r, k)
        out.append((token_to_id[a], token_to_id[b], token_to_id[a + b]))
    return out


short_bytes = st.binary(min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(short_bytes, max_size=40), ids=st.lists(st.integers(0, 10**6), max_size=40),
       picks=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), max_size=30),
       some_missing=st.booleans())
def test_merge_ids_equal_one_by_one_lookups(tokens, ids, picks, some_missing):
    vocab = dict(zip(ids, tokens))
    # Merges of vocabulary tokens, whose joins are then added (as training makes them); ids
    # scattered, byte strings listed twice. With some_missing, a few merges name a token that
    # is not there (without, nearly every example would be one that names one).
    pool = list(vocab.values()) + ([b"\xff\xfe", b"zz"] if some_missing or not vocab else [])
    merges = []
    for x, y in picks:
        a, b = pool[x % len(pool)], pool[y % len(pool)]
        merges.append((a, b))
        if x % 7 or not some_missing:
            vocab.setdefault(max(vocab, default=-1) + 1, a + b)
    token_to_id = {}
    for i in sorted(vocab):
        token_to_id.setdefault(vocab[i], i)
    want = reference_merge_ids(vocab, merges)
    parts = files.MergeParts.of(merges)
    if isinstance(want, tuple):
        _, r, k = want
        with pytest.raises(ValueError, match=f"merge {r} (names|makes) the token"):
            merge_ids(token_to_id, parts)
    else:
        left, right, merged = merge_ids(token_to_id, parts)
        assert list(zip(left.tolist(), right.tolist(), merged.tolist())) == want
    assert parts.pairs() == merges


def test_merge_parts_refuse_what_is_not_a_pair_of_bytes():
    for bad in ([(b"a", "b")], [(b"a",)], [b"ab"], [(b"a", b"b", b"c")], [None]):
        with pytest.raises(TypeError, match="merge 0 must be a pair of bytes"):
            files.MergeParts.of(bad)
    with pytest.raises(TypeError, match="merge 1"):
        Tokenizer({0: b"a", 1: b"b", 2: b"ab"}, [(b"a", b"b"), [b"a"]])


def test_every_gpt2_byte_character_converts_and_others_are_named():
    for b, c in files.BYTE_TO_CHAR.items():
        assert files.str_to_token(c, "x") == bytes([b])
    every = "".join(files.BYTE_TO_CHAR.values())
    assert files.strs_to_tokens([every, "", every[:3]], "x") == [bytes(range(256)), b"",
                                                                 bytes(range(256))[:3]]
    for bad in (" ", "\n", "\u00ad", "\u0144", "é\U0001F642", "\ud800", "a\x00"):
        with pytest.raises(ValueError, match="is not a GPT-2 byte character"):
            files.str_to_token("Ġ" + bad, "where")
        token = re.escape(repr("Ġ" + bad))  # named, not only its character
        with pytest.raises(ValueError, match=f"where: token {token}: .* is not a GPT-2 byte"):
            files.strs_to_tokens(["a", "Ġ" + bad], "where")


@pytest.fixture(scope="module")
def trained():
    return bpe_cffi.train_bpe(bpe_cffi.sample_path(), 1200, [EOT])


def test_list_merges_load_as_string_merges(trained, tmp_path):
    # tokenizers 0.20 on writes each merge as [a, b]; older files as "a b".
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path, [EOT])
    path = tmp_path / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["model"]["merges"] = [m.split(" ") for m in doc["model"]["merges"]]
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    tok = Tokenizer.load(tmp_path)
    assert tok.merges == merges and tok.id_to_token == vocab
    text = open(bpe_cffi.sample_path(), encoding="utf-8").read()[:5000]
    assert tok.encode(text) == Tokenizer(vocab, merges, [EOT]).encode(text)


@pytest.mark.parametrize("bad, match", [
    ("Ġa b c", "merge 3: expected two tokens"),
    (["Ġa"], "merge 3: expected two tokens"),
    ("Ġa b\n", r"merge 3: '\\n' is not a GPT-2 byte character"),
    ("Ġa ", "merge 3 names the token b''"),
    (5, "merge 3: expected two tokens .* got 5"),  # (a TypeError of len(), unnamed)
    (["Ġa", 5], "merge 3: expected two tokens"),
    (None, "merge 3: expected two tokens .* got None"),
    ({"Ġa": "b"}, "model.merges is a dict, not a list"),  # the whole list ("KeyError: 0")
    ("Ġa b", "model.merges is a str, not a list"),
])
def test_malformed_json_merge_is_named(trained, tmp_path, bad, match):
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path, [EOT])
    path = tmp_path / "tokenizer.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    if "model.merges" in match:
        doc["model"]["merges"] = bad
    else:
        doc["model"]["merges"][3] = bad
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        Tokenizer.load(tmp_path)


def test_malformed_merges_txt_line_is_named(trained, tmp_path):
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path, [EOT])
    (tmp_path / "tokenizer.json").unlink()
    path = tmp_path / "merges.txt"
    lines = path.read_text(encoding="utf-8").split("\n")
    for bad, match in (("Ġa\tx b", r"merges\.txt:8: '\\t'"),
                       ("Ġa  b", r"merges\.txt:8: expected")):
        lines[7] = bad
        path.write_text("\n".join(lines), encoding="utf-8")
        with pytest.raises(ValueError, match=match):
            Tokenizer.load(tmp_path)


def test_vocab_json_with_an_id_twice_or_a_bool_is_refused(tmp_path):
    (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    for vocab, match in (({"a": 0, "b": 0}, "id 0 is used twice"),
                         ({"a": 0, "b": True}, "not an int"), ({"a": -1}, "not an int")):
        (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        with pytest.raises(ValueError, match=match):
            files.load_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


def test_load_passes_its_options_on(trained, tmp_path):
    vocab, merges = trained
    bpe_cffi.save(vocab, merges, tmp_path, [EOT])
    tok = Tokenizer.load(tmp_path, num_threads=1, cache_bytes=0)
    assert (tok.num_threads, tok.cache_bytes) == (1, 0)
    (tmp_path / "tokenizer.json").unlink()
    tok = Tokenizer.load(tmp_path, cache_bytes=1 << 20)
    assert tok.cache_bytes == 1 << 20 and tok.merges == merges
    with pytest.raises(ValueError, match="cache_bytes"):
        Tokenizer.load(tmp_path, cache_bytes=-1)


def test_tokens_spelled_alike_encode_as_the_merges_say():
    # (b c), (a b), (ab c), (a bc): "abc" is spelled by two ids, and the encoder's table of
    # tokens that encode to themselves must hold it once, with the id the merges give.
    from reference import encode
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c"), (b"a", b"bc")]
    for a, b in merges:
        vocab[len(vocab)] = a + b
    tok = Tokenizer(vocab, merges)
    for text in ("abc", "abc abcabc", "xbc ab abcd"):
        assert tok.encode(text) == encode(text, vocab, merges)


def test_merges_txt_read_in_blocks_keeps_order_and_line_numbers(tmp_path, monkeypatch):
    # Blocks of a few lines: merges join across them in order, a bad line is named by its
    # number in the file, and blank lines anywhere are skipped.
    real = open

    class SmallBlocks:
        def __init__(self, f):
            self.f = f

        def readlines(self, hint):
            return self.f.readlines(7)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(files, "open", lambda *a, **k: SmallBlocks(real(*a, **k)),
                        raising=False)
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"a", b"b"), (b" ", b"ab"), (b"c", b"d"), (b"cd", b"cd"), (b"x", b"y")]
    for a, b in merges:
        vocab[len(vocab)] = a + b
    path = tmp_path / "merges.txt"
    lines = ["#version: 0.2"] + [f"{files.token_to_str(a)} {files.token_to_str(b)}"
                                 for a, b in merges]
    lines.insert(3, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert files._read_merges_txt(str(path)).pairs() == merges
    lines[5] = "c"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges\.txt:6: expected two tokens"):
        files._read_merges_txt(str(path))
