"""One long pre-token encoded to an array in a fresh process: its time and how far the call
raised the process's peak memory (ru_maxrss, Linux's KiB).

usage: python benchmarks/long_pretoken.py TOKENIZER_DIR BYTES [--fill a] [--random]
(--fill: the character repeated; --random: letters drawn at random, seed 1, instead.)
"""
from __future__ import annotations

import argparse
import random
import resource
import time

import bpe_cffi


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("bytes", type=int)
    ap.add_argument("--fill", default="a")
    ap.add_argument("--random", action="store_true")
    args = ap.parse_args()
    tok = bpe_cffi.Tokenizer.load(args.tokenizer)
    if args.random:
        text = "".join(random.Random(1).choices("etaoinshrdlucmfwyp", k=args.bytes))
    else:
        text = args.fill * args.bytes
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    ids = tok.encode_to_numpy(text)
    seconds = time.perf_counter() - start
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(f"{seconds:.2f} s, peak +{grown / 1024:.0f} MB over {before / 1024:.0f} MB, "
          f"{len(ids)} ids")


if __name__ == "__main__":
    main()
