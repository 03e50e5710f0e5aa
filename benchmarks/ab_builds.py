"""Two builds of bpe_cffi in one process, called in turn: one-thread `encode_to_numpy` of the
first part of a text (or, with --batch, `encode_batch_to_numpy` of the text's lines as fresh
strs, on the default threads), A B B A A B ..., and the median of the per-call ratios. Between
processes this machine's speed swings by a third; calls side by side in one process see the
same minute, which separates differences of a few percent.

Each build's package folder, built in place, is copied under another name first (its modules
import each other relatively, so the name does not matter):

    cp -r ../before/bpe_cffi /tmp/ab/bpe_a && cp -r bpe_cffi /tmp/ab/bpe_b
    python benchmarks/ab_builds.py /tmp/ab TOKENIZER_DIR realmix.txt [--calls 30] [--part 3]
        [--batch]
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", help="a folder holding the packages bpe_a and bpe_b")
    ap.add_argument("tokenizer")
    ap.add_argument("text")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--part", type=int, default=3, help="encode the first 1/PART of the text")
    ap.add_argument("--batch", action="store_true",
                    help="encode_batch_to_numpy of the whole text's lines instead")
    args = ap.parse_args()
    sys.path.insert(0, args.builds)
    if args.batch:
        return _batches(args)
    with open(args.text, "rb") as f:
        data = f.read()
    data = data[:len(data) // args.part]
    data = data[:data.rfind(b"\n") + 1]  # whole characters
    encoders = {}
    for name in ("bpe_a", "bpe_b"):
        tok = importlib.import_module(name).Tokenizer.load(args.tokenizer, num_threads=1)
        encoders[name] = tok._encoder_for(set())  # specials as text: one piece
        encoders[name].encode(data)  # the cache filled
    took: dict[str, list[float]] = {name: [] for name in encoders}
    for call in range(args.calls):
        order = ("bpe_a", "bpe_b") if call % 2 else ("bpe_b", "bpe_a")
        for name in order:
            t = time.perf_counter()
            encoders[name].encode(data)
            took[name].append(time.perf_counter() - t)
    _report(took)


def _batches(args) -> None:
    """--batch: the text's non-empty lines (<|endoftext|> removed) as one batch, fresh strs
    for every call."""
    from encode_common import EOT, fresh
    with open(args.text, encoding="utf-8") as f:
        docs = [d for d in f.read().replace(EOT, "").splitlines() if d]
    toks = {name: importlib.import_module(name).Tokenizer.load(args.tokenizer)
            for name in ("bpe_a", "bpe_b")}
    for tok in toks.values():
        tok.encode_batch_to_numpy(docs)  # the cache filled
    took: dict[str, list[float]] = {name: [] for name in toks}
    for call in range(args.calls):
        order = ("bpe_a", "bpe_b") if call % 2 else ("bpe_b", "bpe_a")
        for name in order:
            batch = [fresh(d) for d in docs]
            t = time.perf_counter()
            toks[name].encode_batch_to_numpy(batch)
            took[name].append(time.perf_counter() - t)
    _report(took)


def _report(took: dict[str, list[float]]) -> None:
    for name, times in took.items():
        print(f"{name}: min {min(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.1f} ms")
    ratios = [b / a for a, b in zip(took["bpe_a"], took["bpe_b"])]
    print(f"b/a: median of per-call ratios {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
