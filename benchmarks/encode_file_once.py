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


def _gigatoken_family(pre_tokenizer: dict) -> str:
    """gigatoken's name for the family of a tokenizer.json written by bpe_cffi, told from its
    pattern without importing bpe_cffi (whose import, numpy's included, would be timed as
    gigatoken's)."""
    text = json.dumps(pre_tokenizer)
    if pre_tokenizer.get("type") == "ByteLevel":
        return "gpt2"
    if r"\\p{Lu}\\p{Lt}" in text:
        return "o200k"
    if r"\\p{N}{1,3}" in text:
        return "gpt4"
    raise SystemExit(f"no gigatoken pretokenizer for {text[:200]}")


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
        tok = gigatoken.Tokenizer.from_tiktoken(
            os.path.join(args.tokenizer, "tokenizer.tiktoken"),
            pretokenizer=_gigatoken_family(doc["pre_tokenizer"]), special_tokens=specials)
        tok.encode_files(gigatoken.TextFileSource([args.corpus], separator="<|endoftext|>"))
        return
    import bpe_cffi
    kw = {} if args.cache_bytes is None else {"cache_bytes": args.cache_bytes}
    tok = bpe_cffi.Tokenizer.load(args.tokenizer, **kw)
    tok.encode_file(args.corpus, args.out)


if __name__ == "__main__":
    main()
