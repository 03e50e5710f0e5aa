"""Encoding one text again and again in one process: each round on a fresh copy of the text
(encode_common.fresh), the first round (cold: threads, pages) reported apart.

usage: python benchmarks/encode_rounds.py CORPUS TOKENIZER_DIR [--how numpy|list|batch]
                                          [--rounds 5] [--threads N]

--how batch encodes the corpus's documents (split at <|endoftext|>) with encode_batch. Prints
one line: the median of the rounds after the first, in ms, then every round.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import bpe_cffi
from encode_common import EOT, fresh


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("tokenizer")
    ap.add_argument("--how", choices=["numpy", "list", "batch"], default="numpy")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    text = open(args.corpus, encoding="utf-8").read()
    loaded = bpe_cffi.Tokenizer.load(args.tokenizer)
    tok = bpe_cffi.Tokenizer(loaded.id_to_token, loaded.merges, loaded.special_tokens,
                             loaded.pattern, num_threads=args.threads)
    fn = {"numpy": tok.encode_to_numpy, "list": tok.encode, "batch": tok.encode_batch}[args.how]
    times = []
    for _ in range(args.rounds + 1):
        arg = [fresh(d) for d in text.split(EOT)] if args.how == "batch" else fresh(text)
        gc.collect()
        t = time.perf_counter()
        result = fn(arg)
        times.append(1000 * (time.perf_counter() - t))
        del result
    print(f"{args.how}: median {statistics.median(times[1:]):.1f} ms; rounds "
          + " ".join(f"{t:.0f}" for t in times))


if __name__ == "__main__":
    main()
