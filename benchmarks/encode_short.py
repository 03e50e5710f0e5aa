"""The per-call cost of encoding short texts, against tiktoken: 200 000 characters of the corpus
cut into texts of each size (and, last, texts of 100 characters ending in <|endoftext|>), each
encoded with its own call (best of --repeat passes, each on fresh copies of the texts:
encode_common.fresh), ids checked against tiktoken's.

usage: python benchmarks/encode_short.py CORPUS [--vocab-size 50000] [--repeat 9]
"""
from __future__ import annotations

import time

import bpe_cffi
from encode_common import EOT, fresh, tiktoken_encoding, trained_on_corpus

SIZES = (100, 300, 500, 1000, 2000)  # characters a text
SPAN = 200_000  # characters cut into texts, for each size


def per_call(fn, texts: list[str], repeat: int) -> float:
    """Best time of one call, in microseconds, over repeat passes through texts."""
    best = float("inf")
    for _ in range(repeat):
        copies = [fresh(s) for s in texts]
        t = time.perf_counter()
        results = [fn(s) for s in copies]
        best = min(best, time.perf_counter() - t)
        del results  # freed after the clock stops, as in pytest-benchmark
    return best / len(texts) * 1e6


def main() -> None:
    args, vocab, merges, text = trained_on_corpus(repeat=9)
    enc = tiktoken_encoding(vocab, merges)
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT])

    def tiktoken_encode(s: str) -> list[int]:
        return enc.encode(s, allowed_special="all")

    for size, end in [(n, "") for n in SIZES] + [(100, EOT)]:  # the last: a chat-like turn
        texts = [text[i:i + size] + end
                 for i in range(0, min(SPAN, len(text)) - size + 1, size)]
        assert [tok.encode(s) for s in texts] == [tiktoken_encode(s) for s in texts]
        ours = per_call(tok.encode, texts, args.repeat)
        theirs = per_call(tiktoken_encode, texts, args.repeat)
        print(f"{size:5d} characters{' + ' + end if end else ''}: bpe_cffi {ours:6.1f} us, "
              f"tiktoken {theirs:6.1f} us ({theirs / ours:.2f}x ours)")


if __name__ == "__main__":
    main()
