"""The process pool used by counting and encode_file.

Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and only the
parent should act on it. The parent's KeyboardInterrupt leaves the `with` block, which
terminates the workers at once, so none is left behind. Exceptions raised in a worker reach
the caller with their own type and message (multiprocessing pickles them back).
"""
from __future__ import annotations

import multiprocessing
import signal
from typing import Callable


def _worker_start(initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def process_pool(processes: int, initializer: Callable | None = None, initargs: tuple = ()):
    """A multiprocessing Pool of the default start method (fork, spawn or forkserver)."""
    return multiprocessing.get_context().Pool(processes, initializer=_worker_start,
                                              initargs=(initializer, initargs))
