"""Cutting a corpus file into byte ranges that can be pre-tokenized independently.

An edge is safe when pre-tokenizing the two sides apart gives exactly the pre-tokens of the
whole (SPEC 1.9: results never depend on chunking). Two kinds of edge are safe:

* the start of a special-token occurrence: the text is cut there anyway (SPEC 1.2);
* with a unit-local pattern (GPT-2's), an edge between a non-whitespace character and a
  whitespace character. No alternative of GPT-2's pattern matches from non-whitespace into
  the whitespace after it, and the pattern has no lookbehind, so each side splits alone exactly
  as it does within the whole. The test is made on ASCII bytes (0x21-0x7E before, one of
  "\\t\\n\\v\\f\\r " after), which are whole characters in UTF-8.

Either kind is safe only if no special-token occurrence straddles it.
"""
from __future__ import annotations

import io
import re
from typing import AnyStr, Sequence

from .pretokenize import UNIT_LOCAL_PATTERNS
from .sources import file_size, open_binary

_FIRST_BLOCK = 1 << 12  # an edge is usually within a few bytes: start small, then grow
_MAX_BLOCK = 1 << 20


def edge_finder(specials: Sequence[AnyStr], unit_local: bool, kind: type = bytes):
    """A pattern whose match starts are the candidate edges (still to be checked with
    `straddled`) in text of type `kind` (bytes for files, str for encode_iterable); None when
    nothing can be an edge."""
    alternatives = ["(?=" + re.escape(s if isinstance(s, str) else s.decode("utf-8")) + ")"
                    for s in specials]
    if unit_local:
        alternatives.append(r"(?<=[\x21-\x7e])(?=[\t\n\x0b\x0c\r ])")
    if not alternatives:
        return None
    pattern = "|".join(alternatives)
    return re.compile(pattern.encode("utf-8") if kind is bytes else pattern)


def straddled(block: AnyStr, i: int, specials: Sequence[AnyStr]) -> bool:
    """Whether an occurrence of a special token starts before block[i] and ends after it."""
    for s in specials:
        j = block.find(s, max(0, i - len(s) + 1), i + len(s) - 1)
        if j != -1 and j < i:
            return True
    return False


def next_safe_edge(f, pos: int, size: int, specials: Sequence[bytes], finder) -> int:
    """The first safe edge at or after pos, or size if there is none."""
    if finder is None:
        return size
    behind = max([len(s) - 1 for s in specials] + [1])
    start, step = pos, _FIRST_BLOCK
    while start < size:
        lo = max(0, start - behind)
        f.seek(lo)
        block = f.read(start - lo + step + behind)
        for m in finder.finditer(block, start - lo):
            i = m.start()
            if lo + i >= start + step:
                break
            if not straddled(block, i, specials):
                return lo + i
        start += step
        step = min(2 * step, _MAX_BLOCK)
    return size


def chunk_target(size: int, num_workers: int) -> int:
    """Aim for several chunks per worker (load balance), each small enough to bound memory."""
    return min(max(size // (4 * num_workers), 1 << 20), 16 << 20)


def plan_chunks(path: str, specials: Sequence[str], pattern: str, target: int) -> list[tuple[int, int]]:
    """Splits the file into (start, end) byte ranges of about `target` bytes on safe edges."""
    with open_binary(path) as f:
        return _plan(f, file_size(path), specials, pattern, target)


def plan_bytes(data: bytes, specials: Sequence[str], pattern: str,
               target: int) -> list[tuple[int, int]]:
    """plan_chunks for text already in memory (UTF-8 bytes)."""
    with io.BytesIO(data) as f:  # shares data's buffer: no copy
        return _plan(f, len(data), specials, pattern, target)


def _plan(f, size: int, specials: Sequence[str], pattern: str,
          target: int) -> list[tuple[int, int]]:
    special_bytes = [s.encode("utf-8") for s in specials]
    finder = edge_finder(special_bytes, pattern in UNIT_LOCAL_PATTERNS)
    edges = [0]
    while edges[-1] + target < size:
        edge = next_safe_edge(f, edges[-1] + target, size, special_bytes, finder)
        if edge >= size:
            break
        edges.append(edge)
    edges.append(size)
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def last_safe_edge(text: str, specials: Sequence[str], finder) -> int:
    """The last safe edge of a text that may continue, or 0 if there is none yet.

    Only edges that more text cannot invalidate count: a special token occurrence that
    straddles the edge must lie wholly inside `text`, so edges closer to the end than the
    longest special are not considered.
    """
    if finder is None:
        return 0
    limit = len(text) - max([len(s) - 1 for s in specials] + [0])
    best = 0
    # Look at the tail first: a safe edge is almost always near the end.
    for window in (1 << 12, 1 << 16, len(text)):
        start = max(0, limit - window)
        for m in finder.finditer(text, start, max(start, limit)):
            i = m.start()
            if 0 < i <= limit and not straddled(text, i, specials):
                best = i
        if best or start == 0:
            return best
    return best
