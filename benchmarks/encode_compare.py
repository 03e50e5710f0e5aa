"""Encoding throughput against tiktoken in one fresh process, outside pytest: the same ranks
(a vocabulary trained on the corpus), identical ids checked, every call on a fresh copy of the
text (encode_common.fresh).

The calls are interleaved: each round runs every row once, so a slow spell of the machine
(a machine's speed can swing by up to 40% from minute to minute) falls on all rows alike
instead of on whichever ran then. Besides the best time of each row, it prints the median over
the rounds of tiktoken encode's time in that round divided by the row's: the ratio least
moved by the machine's swings.

usage: python benchmarks/encode_compare.py CORPUS [--vocab-size 50000] [--repeat 9]
"""
from __future__ import annotations

import statistics
import time

import bpe_cffi
from encode_common import EOT, fresh, tiktoken_encoding, trained_on_corpus


def timed(fn, text: str) -> float:
    """One call's time; its result is freed after the clock stops (tiktoken's list of new int
    objects takes longer to free than ours of shared ones), as in pytest-benchmark."""
    copy = fresh(text)
    t = time.perf_counter()
    result = fn(copy)
    elapsed = time.perf_counter() - t
    del result
    return elapsed


def main() -> None:
    args, vocab, merges, text = trained_on_corpus(repeat=9)
    mb = len(text.encode("utf-8")) / 1e6
    enc = tiktoken_encoding(vocab, merges)
    want = enc.encode(text, allowed_special="all")
    rows = [("tiktoken encode", lambda t: enc.encode(t, allowed_special="all")),
            ("tiktoken encode_to_numpy",
             lambda t: enc.encode_to_numpy(t, allowed_special="all"))]
    for threads in (1, None):
        tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=threads)
        assert tok.encode(text) == want
        label = "1 thread" if threads == 1 else "threads: one per core"
        rows += [(f"bpe_cffi encode, {label}", tok.encode),
                 (f"bpe_cffi encode_to_numpy, {label}", tok.encode_to_numpy)]
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(args.repeat):
        for name, fn in rows:
            times[name].append(timed(fn, text))
    base = times[rows[0][0]]
    print(f"{'':48s} {'best':>7s}  {'MB/s':>6s}  {'x tiktoken encode':>17s}  "
          f"{'median':>7s}  {'median ratio':>12s}")
    for name, ts in times.items():
        ratio = statistics.median(b / t for b, t in zip(base, ts))
        print(f"{name:48s} {min(ts):6.3f}s  {mb / min(ts):6.1f}  {min(base) / min(ts):16.1f}x  "
              f"{statistics.median(ts):6.3f}s  {ratio:11.2f}x")
    print(f"{len(want):,} ids, identical; {args.repeat} rounds, interleaved")


if __name__ == "__main__":
    main()
