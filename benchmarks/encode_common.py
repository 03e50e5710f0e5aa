"""Helpers shared by the encoding benchmarks: fresh copies of texts, the tiktoken anchor with our
ranks, and the command line of the interleaved scripts."""
from __future__ import annotations

import argparse

import bpe_cffi

EOT = "<|endoftext|>"


def fresh(text: str) -> str:
    """A new str equal to text, for timing an encode as a user's first encode of a text.
    CPython keeps a str's UTF-8 once a C extension has asked for it (tiktoken and tokenizers
    do, through PyUnicode_AsUTF8AndSize), and str.encode then copies it instead of encoding
    (realmix: 1 ms against 25): a benchmark that encodes the same str again and again times
    every call after the first without its UTF-8 encoding, for whichever side asked first."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


def tiktoken_encoding(vocab, merges):
    """tiktoken with our ranks and <|endoftext|> (the anchor every encoding benchmark uses)."""
    import tiktoken
    return tiktoken.Encoding("bench", pat_str=bpe_cffi.GPT2_PATTERN,
                             mergeable_ranks={vocab[i]: i for i in range(256 + len(merges))},
                             special_tokens={EOT: 256 + len(merges)})


def trained_on_corpus(repeat: int):
    """The command line shared with encode_compare.py: (args, vocab, merges, the corpus text),
    the vocabulary trained on the corpus itself."""
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--vocab-size", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=repeat)
    args = ap.parse_args()
    vocab, merges = bpe_cffi.train_bpe(args.corpus, args.vocab_size, [EOT])
    return args, vocab, merges, open(args.corpus, encoding="utf-8").read()
