import lzma
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=100, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

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
