"""Tokenizer.load against gigatoken's Tokenizer(tokenizer.json): a fresh interpreter per load
(imports done before the clock starts), the load call timed, the tools interleaved round by
round; prints each tool's median and range.

usage: python benchmarks/load_compare.py TOKENIZER_DIR [--rounds 9]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

LOAD = {
    "bpe_cffi": "import bpe_cffi\nt = time.perf_counter()\nbpe_cffi.Tokenizer.load(d)",
    "gigatoken": "import gigatoken\nt = time.perf_counter()\n"
                 "gigatoken.Tokenizer(d + '/tokenizer.json')",
}


def load_seconds(tool: str, directory: str) -> float:
    code = f"import sys, time\nd = sys.argv[1]\n{LOAD[tool]}\nprint(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code, directory], capture_output=True,
                         text=True, check=True).stdout
    return float(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    times: dict[str, list[float]] = {tool: [] for tool in LOAD}
    for _ in range(args.rounds):
        for tool in LOAD:
            times[tool].append(load_seconds(tool, args.tokenizer))
    for tool, ts in times.items():
        print(f"{tool:10s} median {statistics.median(ts):.3f} s  "
              f"range {min(ts):.3f}-{max(ts):.3f}")


if __name__ == "__main__":
    main()
