"""One trainer, one corpus, in this process (for benchmarks/ab.py): its time, with the imports.

usage: python benchmarks/train_once.py TOOL CORPUS [--vocab-size 10000] [--pattern gpt2]
TOOL: a name from anchors.TRAINERS (bpe_cffi, rustbpe, hf_tokenizers, gigabpe, gigatoken,
bpeasy); pattern: a name of bpe_cffi.PATTERNS. rustbpe, tokenizers and bpeasy take the pattern
from bpe_cffi here, whose import is then part of their process (compare.py resolves it first).
"""
import argparse
import time

import anchors

ap = argparse.ArgumentParser()
ap.add_argument("tool", choices=list(anchors.TRAINERS))
ap.add_argument("corpus")
ap.add_argument("--vocab-size", type=int, default=10_000)
ap.add_argument("--pattern", default="gpt2")
args = ap.parse_args()
t = time.perf_counter()
anchors.TRAINERS[args.tool](args.corpus, args.vocab_size, args.pattern)
print(f"{args.tool}: median {time.perf_counter() - t:.3f} s")
