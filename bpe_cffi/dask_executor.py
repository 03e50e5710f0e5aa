"""Counting on a Dask cluster: the counting tasks of counting.py, run by dask.distributed.

Each task is one byte range of one file, read by the worker that runs it (only paths and
offsets travel through the scheduler). A task's result is compact arrays (words back to back,
offsets, counts), and results are merged pairwise in a tree of tasks, so no worker ever holds
every partial result and the client receives one merged result.
"""
from __future__ import annotations

from typing import Sequence

from .counter import Arrays, WordCounter
from .tally import count_range


def merge_arrays(a: Arrays, b: Arrays) -> Arrays:
    """The word counts of a and b together (a task of the reduction tree)."""
    total = WordCounter()
    total.add(*a)
    total.add(*b)
    return total.export()


def _range_arrays(task) -> Arrays:
    return count_range(task)[0]


def count_on_dask(client, tasks: Sequence[tuple]) -> tuple[Arrays, int]:
    """Runs the counting tasks on the cluster; returns the merged arrays and the number of
    bytes of task descriptions sent to the scheduler."""
    import pickle

    sent = sum(len(pickle.dumps(t)) for t in tasks)
    level = client.map(_range_arrays, list(tasks), pure=False)
    while len(level) > 1:  # a binary tree of merges, run where the inputs are
        nxt = [client.submit(merge_arrays, level[i], level[i + 1], pure=False)
               for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0].result(), sent
