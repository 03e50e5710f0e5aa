import functools
import multiprocessing
import os

import pytest
from hypothesis import settings

import bpe_cffi

settings.register_profile("ci", max_examples=100, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# scripts/sanitize.sh runs the suite with forkserver: under ASan a child forked from a process
# with threads can hang on a lock of ASan's allocator that another thread held at the fork.
if os.environ.get("BPE_TEST_START_METHOD"):
    multiprocessing.set_start_method(os.environ["BPE_TEST_START_METHOD"], force=True)

DATA = os.path.join(os.path.dirname(__file__), "data")


@pytest.fixture(scope="module")
def real_text() -> str:
    return _real_text()


@functools.lru_cache(maxsize=None)  # made once for the whole run
def _real_text() -> str:
    """Real text that ships with the repository, about 390 KB: many scripts, code and odd
    whitespace (tests/data/multilingual.txt), then Genesis and Exodus (the packaged sample),
    with the multilingual text again between every ten chapters."""
    with open(os.path.join(DATA, "multilingual.txt"), encoding="utf-8", newline="") as f:
        mixed = f.read()
    with open(bpe_cffi.sample_path(), encoding="utf-8") as f:
        chapters = f.read().split("<|endoftext|>")
    parts = [mixed]
    for k in range(0, len(chapters), 10):
        parts.append("<|endoftext|>".join(chapters[k:k + 10]))
        parts.append(mixed)
    return "<|endoftext|>".join(parts)
