"""The process pool used by counting and encode_file.

Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and only the
parent should act on it. The parent's KeyboardInterrupt leaves the `with` block, which
terminates the workers at once, so none is left behind. Exceptions raised in a worker reach
the caller with their own type and message (multiprocessing pickles them back).

Large results do not travel back through the pool's result pipe: a worker writes them to a
file in a spill directory and sends only their small description. Pool.terminate kills the
workers wherever they are, and one killed part-way through sending a large result leaves
half a message in the pipe; the pool's result-handler thread then waits forever for the
rest, and terminate never returns (Ctrl-C during a pooled encode_file hung so about one time
in twenty). A message shorter than the pipe's atomic write size (PIPE_BUF, at least 512 bytes
by POSIX, 4 096 on Linux) is written whole or not at all, so a small one cannot be cut.
The same holds for a worker's exception: multiprocessing sends it with its formatted
traceback, which a deep stack makes larger than that, so worker functions raise through
small_errors, which sends the type and the message (at most 1 000 characters) alone.
"""
from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import tempfile
from typing import Callable, Iterator, Sequence

import numpy as np


_MAX_MESSAGE = 1000


def small_errors(fn: Callable) -> Callable:
    """For pool worker functions of one argument: an exception leaves with its type and its
    message only (see above); one whose type cannot be made from a message alone
    (UnicodeEncodeError takes five arguments) leaves as the nearest of its base classes that
    can, so that callers catching it (a ValueError) still do."""
    @functools.wraps(fn)
    def run(job):
        try:
            return fn(job)
        except Exception as e:
            message = str(e)[:_MAX_MESSAGE]
            for kind in type(e).__mro__:  # Exception at the latest
                if not issubclass(kind, BaseException):  # a mixin
                    continue
                try:
                    small = kind(message if kind is type(e) else f"{type(e).__name__}: {message}")
                    break
                except Exception:
                    pass
        # Raised out here, not in the except clause, so that it carries no __context__:
        # picklers that keep contexts and tracebacks (tblib, which Dask installs) would send
        # the original's too.
        raise small
    return run


def _worker_start(initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def process_pool(processes: int, initializer: Callable | None = None, initargs: tuple = ()):
    """A multiprocessing Pool of the default start method (fork, spawn or forkserver)."""
    return multiprocessing.get_context().Pool(processes, initializer=_worker_start,
                                              initargs=(initializer, initargs))


@contextlib.contextmanager
def spill_directory(near: str | None = None) -> Iterator[str]:
    """A new directory for the workers' large results (in `near`, else the system's temporary
    directory), removed with whatever is left in it on exit: open it before the pool, so that
    it outlives every worker that may write into it."""
    with tempfile.TemporaryDirectory(prefix=".bpe_cffi-spill-", dir=near) as directory:
        yield directory


def spill_arrays(path: str, arrays: Sequence[np.ndarray]) -> str:
    """In a worker: writes the arrays to path (in a spill directory); returns path, which is
    what goes back to the parent."""
    with open(path, "wb") as f:
        for a in arrays:
            np.save(f, a, allow_pickle=False)
    return path


def take_spilled_arrays(path: str, n: int) -> list[np.ndarray]:
    """In the parent: the n arrays spill_arrays wrote to path, which is then deleted."""
    with open(path, "rb") as f:
        arrays = [np.load(f, allow_pickle=False) for _ in range(n)]
    os.unlink(path)
    return arrays
