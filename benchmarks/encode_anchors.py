"""Encoding against every anchor, per pattern family, in one process: tiktoken, fastokens,
gigatoken and Hugging Face tokenizers with the same ranks, identical ids checked in the first
round.

Two works, as the targets name them:
- text: the corpus as one text in three parts, each a fresh str, encoded in turn on the same
  objects (caches that carry across calls count): lists (ours `encode`, tiktoken `encode`,
  fastokens `encode(...).ids`, tokenizers `encode(...).ids`) and arrays (ours
  `encode_to_numpy`, gigatoken `encode`);
- batch: the corpus's lines as documents: lists (ours `encode_batch`, a tiktoken loop,
  fastokens `encode_batch`, gigatoken `encode_batch_list`, tokenizers `encode_batch`) and flat
  arrays (ours `encode_batch_to_numpy`, gigatoken `encode_batch`).
Rows are interleaved round by round; the ratio printed is the median over rounds of the
anchor's time over ours (above 1: we are faster).

usage: python benchmarks/encode_anchors.py CORPUS TOKENIZER_DIR [--rounds 5]
(TOKENIZER_DIR written by bpe_cffi's save or CLI, with <|endoftext|>; its pattern picks the
family. gigatoken's rows run for the families it knows (gpt2, cl100k in each form, qwen2 and
o200k) and are left out for nanochat. Hugging Face tokenizers reads the directory's
tokenizer.json.)
"""
from __future__ import annotations

import argparse
import base64
import statistics
import time

import numpy as np

import bpe_cffi
from encode_common import EOT, fresh

GIGATOKEN_NAMES = {"gpt2": "gpt2", "cl100k": "gpt4", "cl100k_tiktoken": "gpt4",
                   "qwen2": "qwen2", "o200k": "o200k"}


def anchors(tokdir: str, tok: bpe_cffi.Tokenizer):
    """(tiktoken, fastokens, gigatoken, tokenizers) with tok's ranks, pattern and
    <|endoftext|>; gigatoken None for a family it has no scheme for."""
    import fastokens
    import gigatoken
    import tiktoken
    import tokenizers
    name = tok.pretokenizer.name
    path = f"{tokdir}/tokenizer.tiktoken"
    specials = {EOT: tok.special_ids[EOT]}
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    tt = tiktoken.Encoding("bench", pat_str=tok.pattern, mergeable_ranks=ranks,
                           special_tokens=specials)
    ft = fastokens.Tokenizer.from_tiktoken(path, pattern=tok.pattern, special_tokens=specials)
    gt = None if name not in GIGATOKEN_NAMES else gigatoken.Tokenizer.from_tiktoken(
        path, pretokenizer=GIGATOKEN_NAMES[name], special_tokens=specials)
    hf = tokenizers.Tokenizer.from_file(f"{tokdir}/tokenizer.json")
    return tt, ft, gt, hf


def run_rows(rows, inputs, rounds: int, check, once=()) -> dict[str, list[float]]:
    """Each row's time in each round; rows named in `once` run in the first round only, rows
    whose function is None not at all."""
    rows = [(name, fn) for name, fn in rows if fn is not None]
    times = {name: [] for name, _ in rows}
    for r in range(rounds):
        for name, fn in rows:
            if r > 0 and name in once:
                continue
            copies = [fresh(x) for x in inputs] if isinstance(inputs[0], str) else \
                [[fresh(t) for t in batch] for batch in inputs]
            t = time.perf_counter()
            out = [fn(x) for x in copies]
            times[name].append(time.perf_counter() - t)
            if r == 0:
                check(name, out)
            del out
    return times


def report(title: str, times, pairs) -> None:
    print(f"\n{title}")
    for name, ts in times.items():
        print(f"  {name:<40s} median {statistics.median(ts) * 1e3:8.1f} ms")
    for ours, theirs in pairs:
        if theirs not in times:  # an anchor left out for this family
            continue
        if len(times[theirs]) < len(times[ours]):  # a row run once: against our median
            ratio = statistics.median(times[theirs]) / statistics.median(times[ours])
        else:
            ratio = statistics.median([b / a for a, b in zip(times[ours], times[theirs])])
        print(f"  {ours} vs {theirs}: {ratio:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("tokenizer")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tok = bpe_cffi.Tokenizer.load(args.tokenizer)
    tt, ft, gt, hf = anchors(args.tokenizer, tok)
    text = open(args.corpus, encoding="utf-8").read()
    print(f"family {tok.pretokenizer.name}, {len(text.encode()) / 1e6:.1f} MB")

    third = len(text) // 3
    parts = [text[:third], text[third:2 * third], text[2 * third:]]
    want = [tt.encode(p, allowed_special="all") for p in parts]

    def same(name, out):
        got = [list(map(int, o)) for o in out]
        assert got == want, f"{name}: ids differ from tiktoken"

    rows = [("ours encode", tok.encode),
            ("ours encode_to_numpy", tok.encode_to_numpy),
            ("tiktoken encode", lambda t: tt.encode(t, allowed_special="all")),
            ("fastokens encode", lambda t: ft.encode(t).ids),
            ("gigatoken encode", gt and (lambda t: np.asarray(gt.encode(t)))),
            ("tokenizers encode", lambda t: hf.encode(t).ids)]
    # tokenizers takes ~20 s for a 9 MB text (its pre-tokenizer on one long str): one round;
    # so for the batch below.
    times = run_rows(rows, parts, args.rounds, same, once={"tokenizers encode"})
    report("one text in three parts", times,
           [("ours encode", "tiktoken encode"), ("ours encode", "fastokens encode"),
            ("ours encode", "tokenizers encode"),
            ("ours encode_to_numpy", "gigatoken encode")])

    docs = [d for d in text.replace(EOT, "").splitlines() if d]
    want_docs = tt.encode_ordinary_batch(docs)
    flat_want = np.fromiter((i for d in want_docs for i in d), np.int64)

    def same_docs(name, out):
        got = out[0]
        if isinstance(got, tuple):  # flat ids and offsets
            assert np.array_equal(np.asarray(got[0], np.int64), flat_want), name
        else:
            assert [list(map(int, d)) for d in got] == want_docs, name

    def gigatoken_flat(batch):
        import awkward as ak
        rows_ = gt.encode_batch(batch)
        return ak.to_numpy(ak.flatten(rows_)), ak.to_numpy(ak.num(rows_))

    rows = [("ours encode_batch", tok.encode_batch),
            ("ours encode_batch_to_numpy", tok.encode_batch_to_numpy),
            ("tiktoken loop", lambda b: [tt.encode_ordinary(t) for t in b]),
            ("fastokens encode_batch", lambda b: [e.ids for e in ft.encode_batch(b)]),
            ("gigatoken encode_batch_list", gt and gt.encode_batch_list),
            ("gigatoken encode_batch", gt and gigatoken_flat),
            ("tokenizers encode_batch", lambda b: [e.ids for e in hf.encode_batch(b)])]
    times = run_rows(rows, [docs], args.rounds, same_docs, once={"tokenizers encode_batch"})
    report(f"a batch of {len(docs)} documents", times,
           [("ours encode_batch", "tiktoken loop"), ("ours encode_batch", "fastokens encode_batch"),
            ("ours encode_batch", "gigatoken encode_batch_list"),
            ("ours encode_batch", "tokenizers encode_batch"),
            ("ours encode_batch_to_numpy", "gigatoken encode_batch")])


if __name__ == "__main__":
    main()
