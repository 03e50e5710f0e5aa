import lzma
import multiprocessing
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=100, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# scripts/sanitize.sh runs the suite with forkserver: under ASan a child forked from a process
# with threads can hang on a lock of ASan's allocator that another thread held at the fork.
if os.environ.get("BPE_TEST_START_METHOD"):
    multiprocessing.set_start_method(os.environ["BPE_TEST_START_METHOD"], force=True)

REALMIX = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench", "realmix.txt.xz")


@pytest.fixture(scope="session")
def realmix_head():
    """The first ~2 MB of the shared real-text corpus, or a skip when it is not there."""
    path = os.environ.get("BPE_REALMIX", REALMIX)
    if not os.path.exists(path):
        pytest.skip("shared/bench/realmix.txt.xz not found")
    with lzma.open(path, "rb") as f:
        data = f.read(2_000_000)
    return data.decode("utf-8", errors="ignore")
