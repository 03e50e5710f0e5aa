"""End-to-end training time and peak memory, each trainer in a fresh process.

usage: python benchmarks/compare.py CORPUS [--vocab-size 10000] [--tools bpe_cffi,rustbpe,...]
       [--pattern gpt2] [--repeat 1] [--csv out.csv]

--pattern is a name of bpe_cffi.PATTERNS; every trainer uses it (gigabpe and gigatoken know
GPT-2's only). Runs of the tools alternate (A B A B ...), each in a fresh process.

Peak memory is that of the largest process the trainer ran (its own or a pool worker's),
read from getrusage(RUSAGE_CHILDREN) in a wrapper process.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import anchors  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {here!r})
import anchors
anchors.RESOLVED[{pattern!r}] = {resolved!r}  # resolved by the parent: no bpe_cffi import here
fn = anchors.TRAINERS[{tool!r}]
t = time.perf_counter()
fn({path!r}, {vocab_size}, {pattern!r})
wall = time.perf_counter() - t
kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
          resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({{"wall_s": wall, "peak_mb": kib / 1024}}))
"""


def run_one(tool: str, path: str, vocab_size: int, pattern: str) -> dict | None:
    code = _CHILD.format(here=HERE, tool=tool, path=os.path.abspath(path), vocab_size=vocab_size,
                         pattern=pattern, resolved=anchors.resolve(pattern))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {tool}: failed or not installed ({last})", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--vocab-size", type=int, default=10_000)
    ap.add_argument("--tools", default="bpe_cffi,rustbpe,hf_tokenizers")
    ap.add_argument("--pattern", default="gpt2")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--csv")
    args = ap.parse_args()
    size_mb = os.path.getsize(args.corpus) / 1e6
    tools = args.tools.split(",")
    runs: dict[str, list[dict] | None] = {tool: [] for tool in tools}
    for _ in range(args.repeat):  # interleaved: a slow spell falls on every tool alike
        for tool in tools:
            if runs[tool] is not None:
                r = run_one(tool, args.corpus, args.vocab_size, args.pattern)
                if r is None:
                    runs[tool] = None  # not installed or failed: not run again
                else:
                    runs[tool].append(r)
    rows = []
    first = tools[0]
    for tool in tools:
        if not runs[tool]:
            continue
        wall = statistics.median(r["wall_s"] for r in runs[tool])
        ratio = ""
        if tool != first and runs[first]:
            ratio = statistics.median(a["wall_s"] / b["wall_s"]
                                      for a, b in zip(runs[first], runs[tool]))
        rows.append({"tool": tool, "pattern": args.pattern, "corpus_mb": round(size_mb, 1),
                     "vocab_size": args.vocab_size, "median_s": round(wall, 2),
                     "peak_mb": round(max(r["peak_mb"] for r in runs[tool])),
                     f"{first}_over_tool": round(ratio, 3) if ratio else ""})
        print(f"{tool:15s} {args.pattern:8s} {size_mb:8.1f} MB  median {wall:7.2f} s  "
              f"{rows[-1]['peak_mb']:6d} MB peak"
              + (f"  {first}/{tool} {ratio:.3f}" if ratio else ""), flush=True)
    if args.csv and rows:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
