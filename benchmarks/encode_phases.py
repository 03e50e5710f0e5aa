"""Where encoding time goes: the phases of Tokenizer.encode_to_numpy on one thread, each timed
around its own call (best of --repeat).

usage: python benchmarks/encode_phases.py CORPUS [--vocab-size 50000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time

import bpe_cffi
from bpe_cffi import units

EOT = "<|endoftext|>"


def phases(tok: bpe_cffi.Tokenizer, text: str) -> dict[str, float]:
    t = [time.perf_counter()]
    data = text.encode("utf-8")
    t.append(time.perf_counter())
    starts, ends, then_id = tok._pieces(data)
    t.append(time.perf_counter())
    with tok._slot_caches.lend() as cache:  # as encode does: tables reuse the last call's blocks
        scanned = units.scan_units(data, starts, ends, then_id, cache)
        t.append(time.perf_counter())
        ids = units.encode_scanned(tok._encoder, scanned, len(data) + len(then_id))
        t.append(time.perf_counter())
    ids.astype(tok._dtype)
    t.append(time.perf_counter())
    names = ["UTF-8 encode", "find specials", "unit scan (C)",
             "encode distinct units + write ids (C)", "cast to the output dtype"]
    return {n: b - a for n, a, b in zip(names, t, t[1:])}


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


def main() -> None:
    args, vocab, merges, text = trained_on_corpus(repeat=3)
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=1)
    runs = [phases(tok, text) for _ in range(args.repeat)]
    for name in runs[0]:
        print(f"{name:40s} {min(r[name] for r in runs):.3f} s")
    print(f"{'sum':40s} {min(sum(r.values()) for r in runs):.3f} s")


if __name__ == "__main__":
    main()
