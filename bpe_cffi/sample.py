"""The corpus that ships inside the package, so a fresh install can train with no download.

Genesis and Exodus from the King James Version (public domain), one chapter per document,
documents separated by <|endoftext|>. Extracted from Debian's bible-kjv package.
"""
from importlib import resources

SAMPLE_SPECIAL = "<|endoftext|>"


def sample_path() -> str:
    """Filesystem path of the packaged sample corpus (about 370 KB)."""
    return str(resources.files("bpe_cffi") / "data" / "kjv_genesis_exodus.txt")
