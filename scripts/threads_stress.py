"""Several Python threads encode and decode through one shared Tokenizer at once (the C calls
run without the GIL), with a cache small enough that its shards fill, are emptied and grow
while other threads read them; every result must equal a one-thread encode without a cache.
scripts/tsan.sh runs it under ThreadSanitizer.

usage: python scripts/threads_stress.py [--pattern gpt2] [--cache-bytes N] [--threads 8]
       [--num-threads 2] [--id-offset N]
--id-offset moves every merged token's id up by N, so that the cache packs ids of 21 or 32
bits instead of 16.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import threading

import numpy as np

import bpe_cffi

EOT = "<|endoftext|>"


def new_words(seed: int, n: int) -> str:
    """n words the sample corpus does not hold, some long, with odd spaces and tails."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzäöéÉ字Ω\u0301"
    return "".join(rng.choice([" ", "  ", "\n", "\t", " '", "\r\n", "/"])
                   + "".join(rng.choice(letters) for _ in range(rng.randint(1, 40)))
                   + rng.choice(["", ",", ".\n", "'s", "123"]) for _ in range(n))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pattern", default="gpt2")
    ap.add_argument("--cache-bytes", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--num-threads", type=int, default=2)
    ap.add_argument("--id-offset", type=int, default=0)
    args = ap.parse_args()
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "tests", "data", "multilingual.txt"), encoding="utf-8",
              newline="") as f:
        real = f.read() + EOT + sample
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 2000, [EOT], pattern=args.pattern)
    vocab = {(i + args.id_offset if i >= 256 else i): b for i, b in vocab.items()}

    texts = [real[k * 30_000:k * 30_000 + 120_000] + new_words(k, 6_000) for k in range(8)]
    texts.append((real + new_words(99, 20_000)) * 4)  # over 2 MB: cut for the tokenizer's threads
    batches = [texts[k:k + 3] for k in range(0, 9, 3)] + [real.split("\n")]
    plain = bpe_cffi.Tokenizer(vocab, merges, [EOT], args.pattern, cache_bytes=0, num_threads=1)
    want = [plain.encode(t) for t in texts]
    want_batches = [[plain.encode(t) for t in b] for b in batches]
    shared = bpe_cffi.Tokenizer(vocab, merges, [EOT], args.pattern, cache_bytes=args.cache_bytes,
                                num_threads=args.num_threads)
    wrong: list[str] = []

    def work(k: int) -> None:
        rng = random.Random(k)
        for _ in range(4):
            i, b = rng.randrange(len(texts)), rng.randrange(len(batches))
            if shared.encode(texts[i]) != want[i]:
                wrong.append(f"encode of text {i}")
            if shared.encode_to_numpy(texts[i]).tolist() != want[i]:
                wrong.append(f"encode_to_numpy of text {i}")
            if shared.encode_batch(batches[b]) != want_batches[b]:
                wrong.append(f"encode_batch of batch {b}")
            ids, offsets = shared.encode_batch_to_numpy(batches[b])
            if [ids[x:y].tolist() for x, y in zip(offsets, offsets[1:])] != want_batches[b]:
                wrong.append(f"encode_batch_to_numpy of batch {b}")
            if shared.decode(np.array(want[i])) != texts[i]:
                wrong.append(f"decode of text {i}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{args.pattern}, cache {args.cache_bytes} bytes, {args.threads} threads: "
          f"{len(wrong)} wrong results {wrong[:5]}; cache {shared.cache_info()}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
