"""Where encoding time goes: the phases of Tokenizer.encode_to_numpy on one thread, each timed
around its own call (best of --repeat).

usage: python benchmarks/encode_phases.py CORPUS [--vocab-size 50000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import bpe_cffi
from bpe_cffi import units
from bpe_cffi._lib import check, ffi, lib

EOT = "<|endoftext|>"


def phases(tok: bpe_cffi.Tokenizer, text: str) -> dict[str, float]:
    t = [time.perf_counter()]
    data = text.encode("utf-8")
    t.append(time.perf_counter())
    starts, ends, found = tok._byte_specials.spans(data)
    then_id = np.array([tok._special_id_of_bytes[f] for f in found] + [-1], np.int32)
    t.append(time.perf_counter())
    scanned = ffi.new("bpe_units **")
    check(lib.bpe_units_scan(ffi.from_buffer("uint8_t[]", data), len(data),
                             ffi.from_buffer("int64_t[]", starts),
                             ffi.from_buffer("int64_t[]", ends),
                             ffi.from_buffer("int32_t[]", then_id), len(starts), scanned),
          "bpe_units_scan")
    t.append(time.perf_counter())
    ids = np.empty(len(data) + len(then_id), np.int32)
    n_out = ffi.new("int64_t *")
    classes = units.char_classes()
    check(lib.bpe_encoder_encode_units(tok._encoder, scanned[0],
                                       ffi.from_buffer("uint8_t[]", classes), len(classes),
                                       ffi.from_buffer("int32_t[]", ids), len(ids), n_out),
          "bpe_encoder_encode_units")
    t.append(time.perf_counter())
    ids[:n_out[0]].astype(tok._dtype)
    t.append(time.perf_counter())
    lib.bpe_units_free(scanned[0])
    names = ["UTF-8 encode", "find specials", "unit scan (C)",
             "encode distinct units + write ids (C)", "cast to the output dtype"]
    return {n: b - a for n, a, b in zip(names, t, t[1:])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--vocab-size", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    vocab, merges = bpe_cffi.train_bpe(args.corpus, args.vocab_size, [EOT])
    tok = bpe_cffi.Tokenizer(vocab, merges, [EOT], num_threads=1)
    text = open(args.corpus, encoding="utf-8").read()
    runs = [phases(tok, text) for _ in range(args.repeat)]
    for name in runs[0]:
        print(f"{name:40s} {min(r[name] for r in runs):.3f} s")
    print(f"{'sum':40s} {min(sum(r.values()) for r in runs):.3f} s")


if __name__ == "__main__":
    main()
