"""The middle third of a corpus encoded to an array again and again in one process, ours
(`encode_to_numpy`) and gigatoken's `encode` interleaved, each round on a fresh str, the
caches warm from a first round; prints the median of each.

usage: python benchmarks/encode_third.py CORPUS TOKENIZER_DIR [--rounds 11]
(TOKENIZER_DIR written by bpe_cffi with <|endoftext|>; gpt2, cl100k_tiktoken or o200k.)
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import bpe_cffi
from encode_anchors import anchors
from encode_common import fresh


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("tokenizer")
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    text = open(args.corpus, encoding="utf-8").read()
    third = text[len(text) // 3:2 * len(text) // 3]
    tok = bpe_cffi.Tokenizer.load(args.tokenizer)
    gt = anchors(args.tokenizer, tok)[2]
    rows = {"ours encode_to_numpy": tok.encode_to_numpy,
            "gigatoken encode": lambda t: np.asarray(gt.encode(t)),
            "str.encode": lambda t: t.encode()}
    for fn in rows.values():
        fn(fresh(third))
    times = {name: [] for name in rows}
    for _ in range(args.rounds):
        for name, fn in rows.items():
            x = fresh(third)
            t = time.perf_counter()
            fn(x)
            times[name].append(time.perf_counter() - t)
    for name, ts in times.items():
        print(f"{name:<22s} median {statistics.median(ts) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
