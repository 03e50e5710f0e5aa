"""A small train + encode + decode run for memory checkers (scripts/valgrind.sh)."""
import random
import tempfile
import warnings

import bpe_cffi

text = open(bpe_cffi.sample_path(), encoding="utf-8").read()[:60_000]
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
    f.write(text + " aaaaaaaaaaaaaaaaaaaa 字字🙂 \u3000x")
    path = f.name
vocab, merges = bpe_cffi.train_bpe(path, 600, ["<|endoftext|>"], num_workers=1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    bpe_cffi.train_from_counts({b"a" * 300: 3, b"ab" * 50: 2, b"\x00\xff": 1}, 400)
# The C scanner, and the regex path (a pattern that no scanner recognises).
for pattern in (bpe_cffi.GPT2_PATTERN, "(?:" + bpe_cffi.GPT2_PATTERN + ")"):
    tok = bpe_cffi.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern=pattern)
    ids = tok.encode(text + "<|endoftext|>" + "x" * 500)
    assert tok.decode(ids) == text + "<|endoftext|>" + "x" * 500
    texts = [text[:3000], "", "a<|endoftext|>b", "<|endof", "text|>", text[3000:9000]]
    assert tok.encode_batch(texts) == [tok.encode(t) for t in texts]
    texts.append("a\0b")  # U+0000: the texts joined without separators
    assert tok.encode_batch(texts) == [tok.encode(t) for t in texts]
# Several specials, some sharing a first byte (memchr) and one not (a table of first bytes).
specials = ["<|endoftext|>", "<|fim|>", "[SEP]"]
tok_specials = bpe_cffi.Tokenizer(vocab, merges, specials)
mixed = "[SEP]".join([text, "a<|fim|>b<|endoftext|>", text])  # over 64 KB: numpy arrays
assert tok_specials.decode(tok_specials.encode(mixed)) == mixed
assert tok_specials.encode("x[SEP]y<|fim|>") == tok_specials.encode_batch(["x[SEP]y<|fim|>"])[0]
# Words over 128 bytes, merged in place under a tree of their lowest ranks (long_word.c).
rng = random.Random(0)
long_words = " ".join(["a" * 2001, "".join(rng.choice("etaoinshr") for _ in range(3000)),
                       "the" * 700])
assert tok.decode(tok.encode_to_numpy(long_words)) == long_words
# Every token whole (ignore_merges: bpe_encoder_set_whole_tokens), a token of 300 bytes among
# them, and a tiktoken rank file's merges: every split of a token into two tokens.
whole = dict(vocab)
whole[max(whole) + 1] = b" " + b"q" * 299
tok_whole = bpe_cffi.Tokenizer(whole, bpe_cffi.encoder.merges_from_ranks(whole), ["<|endoftext|>"],
                               ignore_merges=True)
assert tok_whole.encode(" " + "q" * 299) == [max(whole)]
assert tok_whole.decode(tok_whole.encode(text)) == text
# Texts of 40 000 distinct words: the units' hash tables grow past 4 MB of slots; through the
# cache (the large one's shards move from their small regions to their large ones, past 1 024
# entries each; a small one fills its shards to their bound, and they hold there), and by
# distinct units without one.
rng = random.Random(0)
for cache_bytes in (64 << 20, 300_000, 0):
    tok = bpe_cffi.Tokenizer(vocab, merges, ["<|endoftext|>"], num_threads=1,
                             cache_bytes=cache_bytes)
    for _ in range(2):
        words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))
                         for _ in range(40_000))
        assert tok.decode(tok.encode(words)) == words
# Safe edges in C (csrc/edges.c), every family, up to the end of the bytes and from its start.
from bpe_cffi.chunking import Edges  # noqa: E402
from bpe_cffi.patterns import pretokenizer  # noqa: E402
odd = "a \n/\r\nb\u3000 c\u2028\t字 \u00a0d\n\u0085".encode()
for family in ("gpt2", "cl100k", "o200k"):
    edges = Edges([b"<|endoftext|>"], pretokenizer(family).edges)
    for lo in range(len(odd) + 1):
        assert edges.safe_in(odd, lo, len(odd)) >= -1
print("smoke ok", len(merges), len(ids))
