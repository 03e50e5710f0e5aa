"""Scaling study: training time and peak memory against corpus size, for bpe_cffi and every
installed anchor, on corpora scaled up by shared/bench/synth.py (vocab 10 000,
<|endoftext|>). Writes a CSV and a log-log PNG chart.

usage: python benchmarks/scaling.py [--sizes 25,100,400,2000] [--tools ...] [--out DIR] [--update]
--update keeps the rows of the existing CSV that this run does not redo (say, the anchors'
when only bpe_cffi changed) and redraws the chart from all of them.
Corpora are generated once into .benchmarks/corpora/ (never committed); about 2.5 GB of disk
for the default sizes. Each run is a fresh process (compare.py), so memory is per run.
"""
from __future__ import annotations

import argparse
import csv
import lzma
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared", "bench")
CACHE = os.path.join(ROOT, ".benchmarks", "corpora")
sys.path.insert(0, HERE)

from compare import run_one  # noqa: E402


def realmix() -> str:
    out = os.path.join(CACHE, "realmix.txt")
    if not os.path.exists(out):
        os.makedirs(CACHE, exist_ok=True)
        with lzma.open(os.path.join(SHARED, "realmix.txt.xz")) as src, \
                open(out + ".tmp", "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(out + ".tmp", out)
    return out


def synth(size_mb: int) -> str:
    out = os.path.join(CACHE, f"synth{size_mb}.txt")
    if not os.path.exists(out):
        subprocess.run([sys.executable, os.path.join(SHARED, "synth.py"), realmix(), out + ".tmp",
                        str(size_mb)], check=True, stdout=subprocess.DEVNULL)
        os.replace(out + ".tmp", out)
    return out


def chart(rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for tool in dict.fromkeys(r["tool"] for r in rows):
        pts = sorted((r["corpus_mb"], r["wall_s"], r["peak_mb"]) for r in rows if r["tool"] == tool)
        xs = [p[0] for p in pts]
        ax_t.plot(xs, [p[1] for p in pts], "o-", label=tool)
        ax_m.plot(xs, [p[2] for p in pts], "o-", label=tool)
    for ax, title, unit in ((ax_t, "training time", "wall seconds"),
                            (ax_m, "peak memory, largest process", "MB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("corpus size (MB, synth.py)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend()
    fig.suptitle("Byte-level BPE training, vocab 10 000, 2-core machine")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="25,100,400,2000")
    ap.add_argument("--tools", default="bpe_cffi,rustbpe,hf_tokenizers,bpeasy")
    ap.add_argument("--vocab-size", type=int, default=10_000)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, "scaling.csv")
    sizes, tools = list(map(int, args.sizes.split(","))), args.tools.split(",")
    rows = []
    if args.update and os.path.exists(csv_path):
        with open(csv_path, newline="") as f:
            rows = [{"tool": r["tool"], "corpus_mb": int(r["corpus_mb"]),
                     "wall_s": float(r["wall_s"]), "peak_mb": int(r["peak_mb"])}
                    for r in csv.DictReader(f)
                    if not (r["tool"] in tools and int(r["corpus_mb"]) in sizes)]
    for size in sizes:
        path = synth(size)
        for tool in tools:
            r = run_one(tool, path, args.vocab_size)
            if r is None:
                continue
            rows.append({"tool": tool, "corpus_mb": size, "wall_s": round(r["wall_s"], 2),
                         "peak_mb": round(r["peak_mb"])})
            print(rows[-1], flush=True)
            with open(csv_path, "w", newline="") as f:  # rewritten as results come in
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
    chart(rows, os.path.join(args.out, "scaling.png"))
    print("wrote", csv_path, "and scaling.png")


if __name__ == "__main__":
    main()
