"""Two commands timed in turn (A B A B ...), for before/after and us/anchor figures: a slow
spell of the machine then falls on both alike. Prints each command's median wall time and
peak memory (of the largest process it waited for), and the median of the per-pair ratios A/B.
A command that prints a line with "median" has that line's figure collected too.

usage: python benchmarks/ab.py 'COMMAND A' 'COMMAND B' [-n 5]
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import time


def run(command: str) -> tuple[float, float, float | None]:
    """(wall seconds, peak MB, the command's own median figure or None)."""
    t = time.perf_counter()
    proc = subprocess.run(command, shell=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"failed: {command}\n{proc.stderr[-2000:]}")
    own = re.search(r"median ([\d.]+)", proc.stdout)
    mb = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return wall, int(mb.group(1)) / 1024 if mb else float("nan"), \
        float(own.group(1)) if own else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("-n", type=int, default=5)
    args = ap.parse_args()
    timed = {k: f"/usr/bin/time -v sh -c {shlex.quote(c)}" if os.path.exists("/usr/bin/time")
             else c for k, c in (("A", args.a), ("B", args.b))}
    runs: dict[str, list] = {"A": [], "B": []}
    run(timed["A"]), run(timed["B"])  # warm-up: caches, imports
    for _ in range(args.n):
        for k in "AB":
            runs[k].append(run(timed[k]))
    for k, command in (("A", args.a), ("B", args.b)):
        walls, peaks, own = zip(*runs[k])
        line = f"{k}: wall median {statistics.median(walls):.3f} s, peak {max(peaks):.0f} MB"
        if None not in own:
            line += f", its own median {statistics.median(own):.4g}"
        print(line)
    ratio = statistics.median(a[0] / b[0] for a, b in zip(runs["A"], runs["B"]))
    print(f"A/B wall: median of {args.n} pairs {ratio:.3f}")
    if None not in [r[2] for r in runs["A"] + runs["B"]]:
        own = statistics.median(a[2] / b[2] for a, b in zip(runs["A"], runs["B"]))
        print(f"A/B of the commands' own medians: {own:.3f}")


if __name__ == "__main__":
    main()
