"""Corpora for the benchmarks: shared/bench/realmix when present, else the packaged sample."""
import functools
import lzma
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REALMIX_XZ = os.path.join(ROOT, "..", "shared", "bench", "realmix.txt.xz")
CACHE = os.path.join(ROOT, ".benchmarks", "corpora")  # ignored by git


@pytest.fixture(scope="module")
def corpus() -> str:
    """Path of the benchmark corpus (realmix unpacked once into .benchmarks/, not committed)."""
    path = os.environ.get("BPE_BENCH_CORPUS")
    if path:
        return path
    if os.path.exists(REALMIX_XZ):
        out = os.path.join(CACHE, "realmix.txt")
        if not os.path.exists(out):
            os.makedirs(CACHE, exist_ok=True)
            with lzma.open(REALMIX_XZ, "rb") as src, open(out + ".tmp", "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            os.replace(out + ".tmp", out)
        return out
    import bpe_cffi
    return bpe_cffi.sample_path()


@pytest.fixture(scope="module")
def corpus_counts(corpus):
    return _counts(corpus)


@functools.lru_cache(maxsize=None)  # counted once for the whole run
def _counts(corpus: str):
    import bpe_cffi
    return bpe_cffi.count_words(corpus, ["<|endoftext|>"])
