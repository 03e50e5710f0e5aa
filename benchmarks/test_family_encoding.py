"""Encoding per pattern family against every anchor: bpe_cffi, tiktoken, fastokens, gigatoken
and Hugging Face tokenizers with the same ranks (a 50 000-token vocabulary trained on the
benchmark corpus with the family's pattern), one group per family and form:

- "encode text, FAMILY": the corpus as one text in three parts, on one tokenizer object (a cache
  that carries across calls counts), fresh copies every round; arrays for gigatoken;
- "encode batch, FAMILY": the corpus's lines as one batch of documents;
- "encode file, FAMILY": the corpus file to ids (ours to a .npy, gigatoken in memory).

    pytest benchmarks/test_family_encoding.py --benchmark-only
"""
import base64

import numpy as np
import pytest

import bpe_cffi
from encode_common import EOT, fresh

VOCAB = 50_000
FAMILIES = {"gpt2": "gpt2", "cl100k_tiktoken": "gpt4", "o200k": "o200k"}  # ours: gigatoken's


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, corpus, tmp_path_factory):
    name = request.param
    vocab, merges = bpe_cffi.train_bpe(corpus, VOCAB, [EOT], pattern=name)
    out = tmp_path_factory.mktemp(name)
    bpe_cffi.save(vocab, merges, out, [EOT], name)
    text = open(corpus, encoding="utf-8").read()
    third = len(text) // 3
    parts = [text[:third], text[third:2 * third], text[2 * third:]]
    docs = [d for d in text.replace(EOT, "").splitlines() if d]
    return name, out, parts, docs, corpus


def _tokenizers(family):
    name, out, _, _, _ = family
    tok = bpe_cffi.Tokenizer.load(out)
    specials = {EOT: tok.special_ids[EOT]}
    ranks_path = str(out / "tokenizer.tiktoken")
    return name, tok, ranks_path, specials


def _anchor(kind, family):
    name, tok, path, specials = _tokenizers(family)
    if kind == "tiktoken":
        tiktoken = pytest.importorskip("tiktoken")
        ranks = {}
        with open(path, "rb") as f:
            for line in f:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return tiktoken.Encoding("bench", pat_str=tok.pattern, mergeable_ranks=ranks,
                                 special_tokens=specials)
    if kind == "tokenizers":
        tokenizers = pytest.importorskip("tokenizers")
        return tokenizers.Tokenizer.from_file(str(family[1] / "tokenizer.json"))
    if kind == "fastokens":
        fastokens = pytest.importorskip("fastokens")
        return fastokens.Tokenizer.from_tiktoken(path, pattern=tok.pattern,
                                                 special_tokens=specials)
    gigatoken = pytest.importorskip("gigatoken")
    return gigatoken.Tokenizer.from_tiktoken(path, pretokenizer=FAMILIES[name],
                                             special_tokens=specials)


def _on_fresh(benchmark, fn, texts):
    def setup():
        return ([fresh(t) for t in texts],), {}
    return benchmark.pedantic(fn, setup=setup, rounds=3, iterations=1)


def _group(benchmark, form, family):
    benchmark.group = f"encode {form}, {family[0]}"


@pytest.mark.parametrize("tool", ["bpe_cffi list", "bpe_cffi numpy", "tiktoken", "fastokens",
                                  "gigatoken", "tokenizers"])
def test_text(benchmark, family, tool):
    _group(benchmark, "text", family)
    _, tok, _, _ = _tokenizers(family)
    if tool.startswith("bpe_cffi"):
        fn = tok.encode if tool == "bpe_cffi list" else tok.encode_to_numpy
    elif tool == "tiktoken":
        enc = _anchor(tool, family)
        fn = lambda t: enc.encode(t, allowed_special="all")  # noqa: E731
    elif tool in ("fastokens", "tokenizers"):
        enc = _anchor(tool, family)
        fn = lambda t: enc.encode(t).ids  # noqa: E731
    else:
        enc = _anchor(tool, family)
        fn = lambda t: np.asarray(enc.encode(t))  # noqa: E731
    parts = family[2]
    out = _on_fresh(benchmark, lambda ps: [fn(p) for p in ps], parts)
    assert [len(o) for o in out] == [len(tok.encode_to_numpy(p)) for p in parts]


@pytest.mark.parametrize("tool", ["bpe_cffi list", "bpe_cffi numpy", "tiktoken loop",
                                  "fastokens", "gigatoken list", "gigatoken", "tokenizers"])
def test_batch(benchmark, family, tool):
    _group(benchmark, "batch", family)
    _, tok, _, _ = _tokenizers(family)
    if tool == "bpe_cffi list":
        fn = tok.encode_batch
    elif tool == "bpe_cffi numpy":
        fn = lambda b: tok.encode_batch_to_numpy(b)[0]  # noqa: E731
    elif tool == "tiktoken loop":
        enc = _anchor("tiktoken", family)
        fn = lambda b: [enc.encode_ordinary(t) for t in b]  # noqa: E731
    elif tool in ("fastokens", "tokenizers"):
        enc = _anchor(tool, family)
        fn = lambda b: [e.ids for e in enc.encode_batch(b)]  # noqa: E731
    elif tool == "gigatoken list":
        fn = _anchor("gigatoken", family).encode_batch_list
    else:
        enc = _anchor("gigatoken", family)
        fn = enc.encode_batch
    docs = family[3]
    out = _on_fresh(benchmark, fn, docs)
    assert len(out) == (sum(map(len, tok.encode_batch(docs))) if tool == "bpe_cffi numpy"
                        else len(docs))


@pytest.mark.parametrize("tool", ["bpe_cffi", "gigatoken"])
def test_file(benchmark, family, tool, tmp_path):
    _group(benchmark, "file", family)
    _, tok, _, _ = _tokenizers(family)
    path = family[4]
    if tool == "bpe_cffi":
        fn = lambda: tok.encode_file(path, str(tmp_path / "ids.npy"))  # noqa: E731
    else:
        gigatoken = pytest.importorskip("gigatoken")
        enc = _anchor("gigatoken", family)
        fn = lambda: enc.encode_files(gigatoken.TextFileSource([path], separator=EOT))  # noqa
    benchmark.pedantic(fn, rounds=3, iterations=1)
