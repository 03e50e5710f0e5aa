"""One corpus file to ids in a fresh process, the tokenizer's load included: ours
(`Tokenizer.encode_file` to a .npy) or gigatoken's `encode_files` (a TextFileSource split at
<|endoftext|>, ids held in memory). Time it from outside, e.g.

    farm-bench --vs 'python benchmarks/encode_file_once.py TOK CORPUS --tool gigatoken' -- \\
        python benchmarks/encode_file_once.py TOK CORPUS

usage: python benchmarks/encode_file_once.py TOKENIZER_DIR CORPUS [--tool ours|gigatoken]
       [--cache-bytes N] [--out PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile

GIGATOKEN_NAMES = {"gpt2": "gpt2", "cl100k_tiktoken": "gpt4", "o200k": "o200k"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("corpus")
    ap.add_argument("--tool", choices=["ours", "gigatoken"], default="ours")
    ap.add_argument("--cache-bytes", type=int, default=None)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "encode_file_once.npy"))
    args = ap.parse_args()
    if args.tool == "gigatoken":
        import gigatoken
        with open(os.path.join(args.tokenizer, "tokenizer.json"), encoding="utf-8") as f:
            doc = json.load(f)
        specials = {t["content"]: t["id"] for t in doc["added_tokens"]}
        import bpe_cffi.files
        name = bpe_cffi.patterns.pretokenizer(bpe_cffi.files._hf_pattern(
            doc["pre_tokenizer"], "tokenizer.json")).name
        tok = gigatoken.Tokenizer.from_tiktoken(
            os.path.join(args.tokenizer, "tokenizer.tiktoken"),
            pretokenizer=GIGATOKEN_NAMES[name], special_tokens=specials)
        tok.encode_files(gigatoken.TextFileSource([args.corpus], separator="<|endoftext|>"))
        return
    import bpe_cffi
    kw = {} if args.cache_bytes is None else {"cache_bytes": args.cache_bytes}
    tok = bpe_cffi.Tokenizer.load(args.tokenizer, **kw)
    tok.encode_file(args.corpus, args.out)


if __name__ == "__main__":
    main()
