"""Encoding benchmarks: bpe_cffi against tiktoken and Hugging Face tokenizers with the same
ranks (a 50 000-token vocabulary trained on the benchmark corpus), identical ids checked: the
whole corpus as one text; 2 000 short texts, one call each (the per-call cost) and as one
batch; the corpus's documents (split at <|endoftext|>) as one batch; decoding the corpus's ids.
Every round encodes fresh copies of its texts (encode_common.fresh), for every library alike.

    pytest benchmarks/test_encoding_speed.py --benchmark-only
"""
import gc

import pytest

import bpe_cffi
from encode_common import fresh, tiktoken_encoding

EOT = "<|endoftext|>"
VOCAB = 50_000


@pytest.fixture(scope="module")
def setup(corpus, tmp_path_factory):
    vocab, merges = bpe_cffi.train_bpe(corpus, VOCAB, [EOT])
    text = open(corpus, encoding="utf-8").read()
    out = tmp_path_factory.mktemp("tok")
    bpe_cffi.save(vocab, merges, out, [EOT])
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    want = tok.encode(text)
    # The fixture's data lives through the module: out of the collector's generations, or the
    # first collections after it is made (which traverse its 6.4 M-item list, ~25 ms each)
    # land in whichever benchmark runs first, ours or an anchor's.
    gc.collect()
    gc.freeze()
    yield vocab, merges, text, out, want
    gc.unfreeze()


@pytest.fixture(scope="module")
def tiktoken_enc(setup):
    """The tiktoken anchor with the same ranks (its benchmarks are skipped without it)."""
    pytest.importorskip("tiktoken")
    vocab, merges, _, _, _ = setup
    return tiktoken_encoding(vocab, merges)


def on_fresh(benchmark, fn, texts, rounds: int, **kwargs):
    """benchmark.pedantic(fn, (texts,), kwargs), each round on fresh copies of texts (a str or a
    list of them): no round finds the UTF-8 that an earlier call left in a str."""
    def setup():
        return (fresh(texts) if isinstance(texts, str) else [fresh(t) for t in texts],), kwargs
    return benchmark.pedantic(fn, setup=setup, rounds=rounds, iterations=1)


@pytest.mark.benchmark(group="encode")
@pytest.mark.parametrize("threads", [1, None])  # None: one thread per core (the default)
def test_encode_bpe_cffi_list(benchmark, setup, threads):
    vocab, merges, text, _, want = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=threads)
    assert on_fresh(benchmark, tok.encode, text, rounds=3) == want


@pytest.mark.benchmark(group="encode")
@pytest.mark.parametrize("threads", [1, None])
def test_encode_bpe_cffi_numpy(benchmark, setup, threads):
    vocab, merges, text, _, want = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=threads)
    ids = on_fresh(benchmark, tok.encode_to_numpy, text, rounds=3)
    assert ids.tolist() == want


@pytest.mark.benchmark(group="encode")
def test_encode_tiktoken(benchmark, setup, tiktoken_enc):
    _, _, text, _, want = setup
    ids = on_fresh(benchmark, tiktoken_enc.encode, text, rounds=3, allowed_special="all")
    assert ids == want


def short_texts(text: str, size: int) -> list[str]:
    return [text[i * size:(i + 1) * size] for i in range(2000)]


@pytest.mark.benchmark(group="encode-short")
@pytest.mark.parametrize("size", [100, 2000])  # characters per text
def test_encode_short_bpe_cffi(benchmark, setup, size):
    vocab, merges, text, _, _ = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    docs = short_texts(text, size)
    result = on_fresh(benchmark, lambda texts: [tok.encode(d) for d in texts], docs, rounds=5)
    assert sum(map(len, result)) > len(docs)  # the ids are compared in the tiktoken test


@pytest.mark.benchmark(group="encode-short")
@pytest.mark.parametrize("size", [100, 2000])
def test_encode_short_tiktoken(benchmark, setup, tiktoken_enc, size):
    vocab, merges, text, _, _ = setup
    docs = short_texts(text, size)
    result = on_fresh(
        benchmark, lambda texts: [tiktoken_enc.encode(d, allowed_special="all") for d in texts],
        docs, rounds=5)
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    assert result == [tok.encode(d) for d in docs]


@pytest.mark.benchmark(group="encode-short")
@pytest.mark.parametrize("size", [100, 2000])
def test_encode_short_batch_bpe_cffi(benchmark, setup, size):
    vocab, merges, text, _, _ = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    docs = short_texts(text, size)
    result = on_fresh(benchmark, tok.encode_batch, docs, rounds=5)
    assert result == [tok.encode(d) for d in docs]


@pytest.mark.benchmark(group="encode-short")
@pytest.mark.parametrize("size", [100, 2000])
def test_encode_short_batch_tiktoken(benchmark, setup, tiktoken_enc, size):
    vocab, merges, text, _, _ = setup
    docs = short_texts(text, size)
    result = on_fresh(benchmark, tiktoken_enc.encode_batch, docs, rounds=5,
                      allowed_special="all")
    assert result == bpe_cffi.Tokenizer(vocab, merges, [EOT]).encode_batch(docs)


@pytest.mark.benchmark(group="encode-documents")
def test_encode_documents_bpe_cffi(benchmark, setup):
    vocab, merges, text, _, _ = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    docs = text.split(EOT)
    result = on_fresh(benchmark, tok.encode_batch, docs, rounds=3)
    assert sum(map(len, result)) > len(docs)  # the ids are compared in the tiktoken test


@pytest.mark.benchmark(group="encode-documents")
def test_encode_documents_tiktoken(benchmark, setup, tiktoken_enc):
    vocab, merges, text, _, _ = setup
    docs = text.split(EOT)
    result = on_fresh(benchmark, tiktoken_enc.encode_ordinary_batch, docs, rounds=3)
    assert result == bpe_cffi.Tokenizer(vocab, merges, [EOT]).encode_batch(docs)


@pytest.mark.benchmark(group="encode")
def test_encode_hf_tokenizers(benchmark, setup):
    tokenizers = pytest.importorskip("tokenizers")
    _, _, text, out, want = setup
    hf = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    enc = on_fresh(benchmark, hf.encode, text, rounds=3)
    assert enc.ids == want


@pytest.mark.benchmark(group="decode")
@pytest.mark.parametrize("kind", ["list", "numpy"])
def test_decode_bpe_cffi(benchmark, setup, kind):
    import numpy as np
    vocab, merges, text, _, ids = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    ids = ids if kind == "list" else np.array(ids, np.uint16)
    assert benchmark.pedantic(tok.decode, args=(ids,), rounds=3, iterations=1) == text


@pytest.mark.benchmark(group="decode")
def test_decode_tiktoken(benchmark, setup, tiktoken_enc):
    _, _, text, _, ids = setup
    assert benchmark.pedantic(tiktoken_enc.decode, args=(ids,), rounds=3, iterations=1) == text
