"""Encoding with many special tokens that share their first bytes, as Llama 3's 256
(<|reserved_special_token_N|>), on text full of < (HTML): one text, the best of a few calls.

usage: python benchmarks/many_specials.py TOKENIZER_DIR [--specials 1,16,256] [--rounds 3]
"""
from __future__ import annotations

import argparse
import time

import bpe_cffi

HTML = '<div class="x"><a href="/p">link</a><span>text here</span></div>\n'


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("--specials", default="1,16,256")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    base = bpe_cffi.Tokenizer.load(args.tokenizer)
    text = HTML * 40_000
    for n in map(int, args.specials.split(",")):
        specials = ["<|endoftext|>"] + [f"<|reserved_special_token_{i}|>" for i in range(n - 1)]
        tok = bpe_cffi.Tokenizer(base.id_to_token, base.merges, specials, base.pattern,
                                 num_threads=1)
        tok.encode_to_numpy(text)
        best = min(_seconds(tok, text) for _ in range(args.rounds))
        print(f"{n:5d} specials: {best * 1e3:7.1f} ms for {len(text) / 1e6:.1f} MB")


def _seconds(tok: bpe_cffi.Tokenizer, text: str) -> float:
    t = time.perf_counter()
    tok.encode_to_numpy(text)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
