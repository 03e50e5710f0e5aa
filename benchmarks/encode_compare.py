"""Encoding throughput against tiktoken in one fresh process, outside pytest: the same ranks
(a vocabulary trained on the corpus), identical ids checked, best of --repeat for each, every
call on a fresh copy of the text (encode_phases.fresh).

usage: python benchmarks/encode_compare.py CORPUS [--vocab-size 50000] [--repeat 5]
"""
from __future__ import annotations

import time

import bpe_cffi
from encode_phases import EOT, fresh, tiktoken_encoding, trained_on_corpus


def best(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        copy = fresh(text)
        t = time.perf_counter()
        fn(copy)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    args, vocab, merges, text = trained_on_corpus(repeat=5)
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
    base = None
    for name, fn in rows:
        s = best(fn, text, args.repeat)
        base = base or s
        print(f"{name:48s} {s:6.3f} s  {mb / s:6.1f} MB/s  {base / s:4.1f}x tiktoken encode")
    print(f"{len(want):,} ids, identical")


if __name__ == "__main__":
    main()
