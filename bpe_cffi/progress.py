"""Progress bars: tqdm when asked for (it stays quiet off a terminal), and otherwise a stand-in
that counts, so a job without a bar does not even pay for importing tqdm."""
from __future__ import annotations


class _Quiet:
    """What the code uses of a tqdm bar: a context manager with update() and n."""

    def __init__(self):
        self.n = 0

    def update(self, k: int = 1) -> None:
        self.n += k

    def __enter__(self) -> "_Quiet":
        return self

    def __exit__(self, *exc) -> bool:
        return False


def progress_bar(enabled: bool, **tqdm_args):
    """A tqdm bar if enabled (disable=None: none when stderr is not a terminal)."""
    if not enabled:
        return _Quiet()
    from tqdm import tqdm
    return tqdm(disable=None, **tqdm_args)
