"""Encoding benchmarks: bpe_cffi against tiktoken and Hugging Face tokenizers with the same
ranks (a 50 000-token vocabulary trained on the benchmark corpus), identical ids checked.

    pytest benchmarks/test_encoding_speed.py --benchmark-only
"""
import pytest

import bpe_cffi

EOT = "<|endoftext|>"
VOCAB = 50_000


@pytest.fixture(scope="module")
def setup(corpus, tmp_path_factory):
    vocab, merges = bpe_cffi.train_bpe(corpus, VOCAB, [EOT])
    text = open(corpus, encoding="utf-8").read()
    out = tmp_path_factory.mktemp("tok")
    bpe_cffi.save(vocab, merges, out, [EOT])
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])
    return vocab, merges, text, out, tok.encode(text)


@pytest.mark.benchmark(group="encode")
@pytest.mark.parametrize("threads", [1, None])  # None: one thread per core (the default)
def test_encode_bpe_cffi_list(benchmark, setup, threads):
    vocab, merges, text, _, want = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=threads)
    assert benchmark.pedantic(tok.encode, args=(text,), rounds=3, iterations=1) == want


@pytest.mark.benchmark(group="encode")
@pytest.mark.parametrize("threads", [1, None])
def test_encode_bpe_cffi_numpy(benchmark, setup, threads):
    vocab, merges, text, _, want = setup
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=threads)
    ids = benchmark.pedantic(tok.encode_to_numpy, args=(text,), rounds=3, iterations=1)
    assert ids.tolist() == want


@pytest.mark.benchmark(group="encode")
def test_encode_tiktoken(benchmark, setup):
    tiktoken = pytest.importorskip("tiktoken")
    vocab, merges, text, _, want = setup
    enc = tiktoken.Encoding("bench", pat_str=bpe_cffi.GPT2_PATTERN,
                            mergeable_ranks={vocab[i]: i for i in range(256 + len(merges))},
                            special_tokens={EOT: 256 + len(merges)})
    ids = benchmark.pedantic(enc.encode, args=(text,), kwargs={"allowed_special": "all"},
                             rounds=3, iterations=1)
    assert ids == want


@pytest.mark.benchmark(group="encode")
def test_encode_hf_tokenizers(benchmark, setup):
    tokenizers = pytest.importorskip("tokenizers")
    _, _, text, out, want = setup
    hf = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    enc = benchmark.pedantic(hf.encode, args=(text,), rounds=3, iterations=1)
    assert enc.ids == want
