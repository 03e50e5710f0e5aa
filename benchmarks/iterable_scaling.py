"""encode_iterable on inputs that offer few safe edges, at growing sizes: the time of each
size (the median of 3) and its ratio to the size before (linear: about the ratio of the
sizes), and the first use of the tokenizer, timed apart. The cases are
those that once made it quadratic: a pattern the regex module splits, read by lines; GPT-2's
pattern on text without whitespace in 4 KB chunks; a long special token that never occurs,
read by lines; one long special token in the text, read by lines; one character at a time.

usage: python benchmarks/iterable_scaling.py [--sizes 250000 1000000 4000000]
(a 3 000-token vocabulary trained on the packaged sample, which is also the text.)
"""
from __future__ import annotations

import argparse
import statistics
import time

import bpe_cffi

EOT = "<|endoftext|>"


def case_input(case: str, sample: str, size: int):
    """(special tokens, pattern, chunks) of a case at a size."""
    specials, pattern = [EOT], bpe_cffi.GPT2_PATTERN
    text = (sample * (size // len(sample) + 1))[:size]
    if case == "custom pattern by lines":
        pattern = r"\w+|[^\w\s]+|\s+"
    elif case == "200 K special never found, by lines":
        specials = [EOT, "Z" * 200_000]
    elif case == "1 M special in the text, by lines":
        special = "Q" * 1_000_000
        specials = [EOT, special]
        text = text[:size // 2] + special + text[size // 2:]
    if case == "no whitespace, 4 KB chunks":
        text = sample.replace(" ", "").replace("\n", "")
        text = (text * (size // len(text) + 1))[:size]
        return specials, pattern, [text[i:i + 4096] for i in range(0, size, 4096)]
    if case == "one character at a time":
        return specials, pattern, list(text)
    return specials, pattern, text.splitlines(keepends=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[250_000, 1_000_000, 4_000_000])
    args = ap.parse_args()
    sample = open(bpe_cffi.sample_path(), encoding="utf-8").read().replace(EOT, "")
    vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 3000, [EOT])
    cases = ["custom pattern by lines", "no whitespace, 4 KB chunks",
             "200 K special never found, by lines", "1 M special in the text, by lines",
             "one character at a time"]
    for case in cases:
        row, before, first_use = [], None, 0.0
        for size in args.sizes:
            specials, pattern, chunks = case_input(case, sample, size)
            tok = bpe_cffi.Tokenizer(vocab, merges, specials, pattern=pattern)
            t = time.perf_counter()
            tok.encode(EOT)  # a first use, timed apart (threads and tables set up once)
            first_use = first_use if before else time.perf_counter() - t  # (later: cached)
            times = []
            for _ in range(3):
                t = time.perf_counter()
                for _ in tok.encode_iterable(chunks):
                    pass
                times.append(time.perf_counter() - t)
            took = statistics.median(times)
            row.append(f"{took:.3f} s" + (f" ({took / before:.1f}x)" if before else ""))
            before = took
        print(f"{case:<38s} " + "  ".join(row) + f"  (first use {first_use:.3f} s)")


if __name__ == "__main__":
    main()
