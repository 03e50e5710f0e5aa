"""count_words of one corpus in each pattern family, interleaved in one process: the time of
each family and its ratio to GPT-2's (min of the rounds).

usage: python benchmarks/count_families.py CORPUS [--rounds 5] [--workers N]
"""
import argparse
import time

import bpe_cffi

ap = argparse.ArgumentParser()
ap.add_argument("corpus")
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--workers", type=int, default=None)
args = ap.parse_args()
families = ["gpt2", "cl100k", "o200k", "qwen2", "nanochat"]
times: dict[str, list[float]] = {f: [] for f in families}
for _ in range(args.rounds):
    for family in families:
        t = time.perf_counter()
        bpe_cffi.count_words(args.corpus, ["<|endoftext|>"], pattern=family,
                             num_workers=args.workers)
        times[family].append(time.perf_counter() - t)
for family in families:
    best = min(times[family])
    print(f"{family:9s} min {best * 1000:7.1f} ms  {best / min(times['gpt2']):.2f}x gpt2")
