"""The process pool used by counting and encode_file.

Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole process group, and only the
parent should act on it. The parent's KeyboardInterrupt leaves the `with` block, which
terminates the workers at once, so none is left behind. Exceptions raised in a worker reach
the caller with their own type and message (multiprocessing pickles them back).

Any other way out of the `with` block (the end of the work, or an error in a worker or in the
parent) does not kill the workers: it asks them to stop, closes the pool and waits for them.
Pool.terminate kills a worker wherever it is, and one killed while it holds the lock of the
pool's result queue (sending a result) leaves the lock held for ever: the pool's task
handler then blocks in its last put on that queue, and terminate, which joins that thread,
never returns (a worker's error ended so about one time in ten under the sanitizers). So a
`with` block left by an exception sets the pool's stop event, every job that starts after
that returns None at once (pool_job), and the wait lasts at most the jobs already running.

Large results do not travel back through the pool's result pipe: a worker writes them to a
file in a spill directory and sends only their small description. A worker killed part-way
through sending a large result leaves half a message in the pipe; the pool's result-handler
thread then waits forever for the rest, and terminate never returns (Ctrl-C during a pooled
encode_file hung so about one time in twenty). A message shorter than the pipe's atomic
write size (PIPE_BUF, at least 512 bytes by POSIX, 4 096 on Linux) is written whole or not
at all, so a small one cannot be cut. The same holds for a worker's exception:
multiprocessing sends it with its formatted traceback, which a deep stack makes larger than
that, so worker functions raise through pool_job, which sends the type and the message (at
most 1 000 characters) alone, or for a UnicodeEncodeError a few hundred characters of its text.

Large jobs do not travel through the pool's task pipe either (small_job): the parent writes
them to a file in the spill directory and sends its path, and pool_job reads it back. The
pool's task-handler thread writes each job into that pipe; once terminate has stopped the
workers and drained the pipe for the last time, a job larger than the pipe's buffer (64 KB on
Linux) that the thread was still writing blocks it for ever, and terminate, which joins the
thread, never returns (Ctrl-C during a pooled train_from_iterator, whose jobs were batches of
4 M characters, hung so 2 times in 20). A job of at most _JOB_MAX_BYTES, with the few bytes
of the pool's own messages after it, fits the buffer that the drain left empty.
"""
from __future__ import annotations

import contextlib
import functools
import multiprocessing
import multiprocessing.pool
import os
import pickle
import signal
import tempfile
import threading
from typing import Callable, Iterator, Sequence

import numpy as np


_MAX_MESSAGE = 1000
_JOB_MAX_BYTES = 16 << 10  # a job pickled larger goes through a spill file (see above)
_ENCODE_ERROR_WINDOW = 100  # characters of its text a worker's UnicodeEncodeError keeps a side


_stop = None  # in pool workers: the pool's stop event
_POLL_S = 0.5  # how often a wait for results checks that the workers live
# Pools are started one at a time, so that the children that appear while one starts are its
# workers (multiprocessing.active_children: the public way to see them).
_starting = threading.Lock()


def _new_starting_lock() -> None:
    """In a child forked while another thread started a pool (and held the lock): that thread
    does not run there to let it go, and the child's first pool waited for ever."""
    global _starting
    _starting = threading.Lock()


os.register_at_fork(after_in_child=_new_starting_lock)


class WorkerDied(ChildProcessError):
    """A worker of the pool died (the out-of-memory killer, kill -9): multiprocessing starts
    another in its place but drops the job it had, so a wait for that job's result never
    ended (encode_file and train_bpe hung for ever)."""


def stopping() -> bool:
    """Whether this process is a worker of a pool whose parent has given up on the work (an
    error): what is left of a job need not be done."""
    return _stop is not None and _stop.is_set()


class WorkerEncodeError(UnicodeEncodeError):
    """A worker's UnicodeEncodeError (a lone surrogate), small: its object is the text around
    the characters that fail, at most _ENCODE_ERROR_WINDOW characters each side, and start
    and end count in that. Pickled with its five arguments: tblib (which Dask installs)
    pickles a UnicodeEncodeError without them, and it arrived empty. A caller that still has
    the texts raises the text's own error instead (iterator_counting)."""

    def __reduce__(self):
        return type(self), (self.encoding, self.object, self.start, self.end, self.reason)


def pool_job(fn: Callable) -> Callable:
    """For pool worker functions of one argument: a job that starts once the pool is stopping
    returns None at once, and an exception leaves with its type and its message only (see
    above); one whose type cannot be made from a message alone leaves as the nearest of its
    base classes that can, so that callers catching it (a ValueError) still do; a
    UnicodeEncodeError as a WorkerEncodeError."""
    @functools.wraps(fn)
    def run(job):
        if stopping():
            return None
        try:
            if isinstance(job, SpilledJob):
                job = job.take()
            return fn(job)
        except UnicodeEncodeError as e:
            end = min(e.end, e.start + _ENCODE_ERROR_WINDOW)  # (a run of surrogates)
            lo, hi = max(0, e.start - _ENCODE_ERROR_WINDOW), end + _ENCODE_ERROR_WINDOW
            small = WorkerEncodeError(e.encoding, e.object[lo:hi], e.start - lo, end - lo,
                                      e.reason[:_MAX_MESSAGE])
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


def _worker_start(stop, initializer: Callable | None, initargs: tuple) -> None:
    global _stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _stop = stop
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def process_pool(processes: int, initializer: Callable | None = None,
                 initargs: tuple = ()) -> Iterator[multiprocessing.pool.Pool]:
    """A multiprocessing Pool of the default start method (fork, spawn or forkserver), for a
    `with` block; on leaving it, the workers are waited for, or killed on KeyboardInterrupt
    (see above)."""
    context = multiprocessing.get_context()
    stop = context.Event()
    with _starting:
        before = set(multiprocessing.active_children())
        pool = context.Pool(processes, initializer=_worker_start,
                            initargs=(stop, initializer, initargs))
        # As started (the Pool starts them all at once): one of them dying is an error.
        pool.bpe_workers = [p for p in multiprocessing.active_children() if p not in before]
    try:
        yield pool
    except WorkerDied:  # close() would wait for ever for the dropped job
        _terminate(pool)
        raise
    except Exception:
        stop.set()
        _close(pool)
        raise
    except BaseException:
        _terminate(pool)
        raise
    _close(pool)


def results(pool: multiprocessing.pool.Pool, iterator) -> Iterator:
    """The results of pool.imap or imap_unordered as they come; WorkerDied if a worker dies
    meanwhile."""
    while True:
        try:
            yield iterator.next(timeout=_POLL_S)
        except StopIteration:
            return
        except multiprocessing.TimeoutError:
            check_workers(pool)


def result(pool: multiprocessing.pool.Pool, async_result):
    """async_result.get(); WorkerDied if a worker dies meanwhile."""
    while True:
        try:
            return async_result.get(timeout=_POLL_S)
        except multiprocessing.TimeoutError:
            check_workers(pool)


def check_workers(pool: multiprocessing.pool.Pool) -> None:
    """WorkerDied if a worker the pool started has died."""
    for worker in pool.bpe_workers:
        code = worker.exitcode
        if code:  # (0: a worker that ended of itself, which these pools' workers never do)
            how = (f"was killed by signal {-code}" if code < 0 else f"exited with status {code}")
            hint = " (the system may have run out of memory)" if code == -signal.SIGKILL else ""
            raise WorkerDied(f"a worker process {how}{hint}; its work was lost")


def _close(pool: multiprocessing.pool.Pool) -> None:
    """Lets the pool's workers finish the jobs they have and waits for them to exit."""
    pool.close()
    try:
        pool.join()
    except BaseException:  # Ctrl-C while waiting
        _terminate(pool)
        raise


def _terminate(pool: multiprocessing.pool.Pool) -> None:
    """pool.terminate(); if a second Ctrl-C cuts it short, the workers are killed here: a
    terminate interrupted once it had taken the task queue's lock (_help_stuff_finish) left
    them blocked on that lock for ever, alive as long as the caller (orphans after it)."""
    try:
        pool.terminate()
    except BaseException:
        for worker in pool.bpe_workers:
            with contextlib.suppress(Exception):
                worker.kill()
        raise


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


class SpilledJob:
    """A large job's place in a spill directory, sent through the pool's task pipe instead of
    the job (see above)."""

    def __init__(self, path: str):
        self.path = path

    def take(self):
        """In a worker: the job, whose file is then deleted."""
        with open(self.path, "rb") as f:
            job = pickle.load(f)
        os.unlink(self.path)
        return job


def small_job(job, spill: str):
    """In the parent: the job, or if it pickles to more than _JOB_MAX_BYTES a SpilledJob of
    it, written to a new file in the spill directory spill. For pool_job functions."""
    data = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
    if len(data) <= _JOB_MAX_BYTES:
        return job
    fd, path = tempfile.mkstemp(suffix=".job", dir=spill)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return SpilledJob(path)
