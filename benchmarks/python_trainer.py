"""An incremental pure-Python BPE trainer: the merge-phase baseline for the C core.

What a careful Python implementation looks like: pair counts kept up to date, an index from
each pair to the words that contain it, and a heap with lazy deletion to find the best pair.
Same rules as SPEC 1 (ties to the greatest (bytes, bytes)); tokens are known by their bytes.
"""
from __future__ import annotations

import heapq
from collections import defaultdict


class _Entry:
    """Heap entry: heapq pops the smallest, so "smaller" means "merged first"."""
    __slots__ = ("count", "pair")

    def __init__(self, count, pair):
        self.count, self.pair = count, pair

    def __lt__(self, other):
        if self.count != other.count:
            return self.count > other.count
        return self.pair > other.pair


def _pairs(tokens):
    return list(zip(tokens, tokens[1:]))


def _merge(tokens, pair):
    out, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and tokens[i] == pair[0] and tokens[i + 1] == pair[1]:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out


def train(counts: dict[bytes, int], n_merges: int) -> list[tuple[bytes, bytes]]:
    words = [[bytes([b]) for b in w] for w in counts]
    freq = list(counts.values())
    pair_count: dict = defaultdict(int)
    where: dict = defaultdict(set)
    for i, tokens in enumerate(words):
        for p in _pairs(tokens):
            pair_count[p] += freq[i]
            where[p].add(i)
    heap = [_Entry(c, p) for p, c in pair_count.items() if c > 0]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < n_merges:
        e = heapq.heappop(heap)
        if pair_count.get(e.pair, 0) != e.count or e.count <= 0:
            continue  # stale
        best = e.pair
        merges.append(best)
        touched = set()
        for i in list(where[best]):
            old = words[i]
            new = _merge(old, best)
            if new == old:
                continue
            for p in _pairs(old):
                pair_count[p] -= freq[i]
                touched.add(p)
                where[p].discard(i)
            for p in _pairs(new):
                pair_count[p] += freq[i]
                touched.add(p)
                where[p].add(i)
            words[i] = new
        for p in touched:
            if pair_count[p] > 0:
                heapq.heappush(heap, _Entry(pair_count[p], p))
    return merges
