"""Work handed to a thread pool, that runs on the calling thread once the pool takes no more.

concurrent.futures refuses new work once the interpreter has begun to shut down: a thread still
running after the main thread returned, or an atexit handler, got "RuntimeError: cannot schedule
new futures after interpreter shutdown" from any input long enough to be cut for threads. The
work is the same on one thread, only slower.
"""
from __future__ import annotations

from concurrent.futures import Executor, Future
from typing import Callable, Iterable, Iterator


def submit_or_run(pool: Executor, fn: Callable, *args) -> Future:
    """pool.submit(fn, *args), or fn(*args) run here, as a future already done, once the pool
    takes no more. Its error too is the future's, raised when its result is asked for, after
    those of the jobs before it."""
    try:
        return pool.submit(fn, *args)
    except RuntimeError:  # the interpreter shuts down (or the pool did)
        pass
    done: Future = Future()
    try:
        done.set_result(fn(*args))
    except Exception as e:
        done.set_exception(e)
    return done


def map_in_threads(pool: Executor, fn: Callable, arg_tuples: Iterable[tuple]) -> list:
    """[fn(*args) for args in arg_tuples], on the pool's threads (see in_threads)."""
    return list(in_threads(pool, fn, arg_tuples))


def in_threads(pool: Executor, fn: Callable, arg_tuples: Iterable[tuple]) -> Iterator:
    """fn(*args) for args in arg_tuples, on the pool's threads: each submitted as its
    arguments come (the calling thread may make the next ones while the threads work); once
    all are submitted, the results are yielded in order, each as soon as it and those before
    it are done (the calling thread may use one while the threads finish the next). Once the
    pool refuses them, they run here (submit_or_run)."""
    futures: list[Future] = []
    try:
        for args in arg_tuples:
            futures.append(submit_or_run(pool, fn, *args))
        for f in futures:
            yield f.result()
    finally:  # after an error, or once the caller stops, what has not started need not run
        for f in futures:
            f.cancel()
