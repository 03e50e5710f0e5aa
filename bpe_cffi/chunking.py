"""Cutting text into parts that pre-tokenize independently: corpus files into byte ranges for
the process pool, long texts into parts for threads, and encode_iterable's stream.

An edge is safe when pre-tokenizing the two sides apart gives exactly the pre-tokens of the
whole (docs/spec.md: results never depend on chunking). Two kinds of edge are safe:

* the start of a special token's occurrence: the text is cut there anyway;
* with a pattern family that has a C scanner, its safe edges beside ASCII whitespace
  (Pretokenizer.edges; csrc/units.h says why they are safe), whole characters in UTF-8:
  found by csrc/edges.c on bytes, by the family's edge regex on str.

Either kind is safe only if no occurrence of a special token straddles it. A pattern split by
the regex module has no edges of the second kind: its text is cut at special tokens only.
"""
from __future__ import annotations

import bisect
from typing import AnyStr, Iterable, Iterator, Sequence

import regex

from ._lib import check, ffi, lib
from .patterns import EdgePatterns
from .sources import file_size, open_binary

_FIRST_BLOCK = 1 << 12  # an edge is usually within a few bytes: start small, then grow
_MAX_BLOCK = 1 << 20
_LAST_BLOCK = 256  # last_edge's first block back from the end of a text


def _period(s: AnyStr) -> int:
    """The smallest p > 0 with s[i] == s[i + p] wherever both exist (len(s) if none is
    smaller): the shift at which s can occur again over itself. KMP's failure function."""
    fail = [0] * (len(s) + 1)  # fail[i]: the longest proper border of s[:i]
    k = 0
    for i in range(1, len(s)):
        while k and s[i] != s[k]:
            k = fail[k]
        if s[i] == s[k]:
            k += 1
        fail[i + 1] = k
    return len(s) - fail[len(s)]


def _occurrences(text: AnyStr, s: AnyStr, period: int, start: int, end: int
                 ) -> list[tuple[int, int]]:
    """The occurrences of s in text[start:end] as spans [a, b), overlapping ones included; a
    run of occurrences overlapping each other (s can only recur `period` further on, within
    its length) as one span from the first's start to the last's end. The runs are measured
    with slice comparisons of doubling length, not found one occurrence at a time: "x" * 1000
    in 3 MB of "x" is 3 M overlapping occurrences, 1 000 characters compared for each."""
    spans = []
    m = len(s)
    at = text.find(s, start, end)
    while at != -1:
        run_end = at + m  # text[at:run_end] repeats with s's period
        step = period if period < m else 0
        while step:  # text[j] == text[j - period] for j in [run_end, run_end + step)?
            if run_end + step <= end and text[run_end:run_end + step] == \
                    text[run_end - period:run_end + step - period]:
                run_end += step
                step *= 2
            else:
                step //= 2
        last = at + (run_end - m - at) // period * period  # the run's last occurrence
        spans.append((at, last + m))
        at = text.find(s, last + 1, end)
    return spans


class _Insides:
    """The points that lie strictly inside one of a list of spans [a, b): the spans' insides
    merged, searched by bisection. Checking every span for every edge was quadratic where
    occurrences overlap (a special token "==" in a run of "=": 30 s for 64 KB)."""

    def __init__(self, spans: list[tuple[int, int]]):
        self.starts: list[int] = []
        self.ends: list[int] = []
        for a, b in sorted(spans):
            if self.starts and a < self.ends[-1]:  # (a, b) meets the inside before it
                self.ends[-1] = max(self.ends[-1], b)
            else:
                self.starts.append(a)
                self.ends.append(b)

    def starts_in(self, lo: int, hi: int) -> list[int]:
        """The starts of insides in [lo, hi): the spans' starts that lie strictly inside no
        span (one inside in a merged run starts it), found by bisection rather than one test
        a span (a block dense with occurrences of "<|endoftext|>" took 443 against 265 us)."""
        return self.starts[bisect.bisect_left(self.starts, lo):bisect.bisect_left(self.starts, hi)]

    def clear_from(self, i: int) -> int:
        """The first point at or after i that lies strictly inside no span: the end of the
        inside that holds i, if one does (an inside's two ends are clear: an occurrence
        straddles neither)."""
        k = bisect.bisect_left(self.starts, i) - 1  # the last inside starting before i
        return self.ends[k] if k >= 0 and i < self.ends[k] else i


class Edges:
    """The safe edges of text of one kind (bytes for files and UTF-8, str for streams), for
    the given special tokens and the family's edge pattern (None: special tokens only).

    Special tokens are found with find (linear however long they are; a regex of a very long
    literal takes seconds to compile), the family's edges with its regex; edges are searched
    in blocks, so that the cost is that of the text around the edge found."""

    def __init__(self, specials: Sequence[bytes], edges: EdgePatterns | None,
                 kind: type = bytes):
        def as_kind(b: bytes):
            return b if kind is bytes else b.decode("utf-8")
        self.specials = [as_kind(s) for s in specials]
        self.periods = [_period(s) for s in self.specials]
        self.finder = None if edges is None else \
            regex.compile(edges.utf8 if kind is bytes else edges.text)
        #: on bytes, the family whose edges csrc/edges.c finds (the regex's, 100 times faster
        #: where text holds whitespace but no edge), else None
        self.c_family = None if edges is None or kind is not bytes else edges.code
        #: how far a family edge's regex reads on either side of it: a character (str), or
        #: one in UTF-8, up to 3 bytes (bytes)
        self.reach = 3 if kind is bytes else 1
        self.ascii_space = as_kind(b" \n\t\r\x0b\x0c")
        #: characters of a special token that can lie before an edge it straddles
        self.behind = max([len(s) - 1 for s in self.specials] + [0])
        self.none = self.finder is None and not self.specials  # no edge anywhere

    def safe_in(self, text: AnyStr, lo: int, hi: int, last: bool = False) -> int:
        """The first (or last) safe edge i of text with lo <= i < hi and i > 0, or -1. An
        edge is a family edge or the start of a special token, and is safe if no occurrence
        of a special token straddles it; text must extend to hi + max(self.behind,
        self.reach) (or its end), and from lo - self.reach (or its start)."""
        spans = []  # the special tokens' occurrences that reach into [lo, hi)
        for s, period in zip(self.specials, self.periods):
            spans += _occurrences(text, s, period, max(0, lo - len(s) + 1),
                                  min(len(text), hi + len(s) - 1))
        insides = _Insides(spans)
        starts = insides.starts_in(max(lo, 1), hi)  # the safe starts of special tokens
        if starts:  # a family edge wins only before the first (after the last) of these
            lo, hi = (starts[-1] + 1, hi) if last else (lo, starts[0])
        # No inside starts within [lo, hi) now: at most one, begun before, reaches into it, and
        # family edges are searched past its end only. A text covered by overlapping
        # occurrences (8 MB of "x " with a special token "x x") cost a step a rejected edge.
        lo = insides.clear_from(max(lo, 1))
        if self.finder is not None and lo < hi and self._may_hold_an_edge(text, lo - 1, hi):
            i = self._family_edge(text, lo, hi, last)
            if i >= 0:
                return i
        return (starts[-1] if last else starts[0]) if starts else -1

    def _family_edge(self, text: AnyStr, lo: int, hi: int, last: bool) -> int:
        """The first (or last) family edge i of text with lo <= i < hi, or -1. An edge at i
        reads the characters at i - 1 and i (on bytes, the whole of each, up to self.reach
        bytes): the search ends just past the character hi falls in, so that a text without
        edges costs each block its own length, not the rest of the text. The first edge stops
        a forward search: the regex costs 20-370 ns a byte, and a whole block of 4 KB took a
        long text's three cuts for threads 3 ms."""
        limit = min(len(text), hi + self.reach - 1)
        if self.c_family is None:
            found = (m.start() for m in self.finder.finditer(text, lo, limit) if m.start() < hi)
            if last:
                return max(found, default=-1)
            return next(found, -1)
        buf = text if isinstance(text, bytes) else ffi.from_buffer("uint8_t[]", text)
        at = ffi.new("int64_t *")
        check(lib.bpe_next_edge(self.c_family, buf, limit, lo, hi, at), "bpe_next_edge")
        while last and at[0] >= 0:  # (no caller searches bytes backwards)
            i = at[0]
            check(lib.bpe_next_edge(self.c_family, buf, limit, i + 1, hi, at), "bpe_next_edge")
            if at[0] < 0:
                return i
        return at[0]

    def _may_hold_an_edge(self, text: AnyStr, lo: int, hi: int) -> bool:
        """Whether text[lo:hi] holds both an ASCII whitespace character and a character that
        is not one: every family edge has the first at it or just before it, and the second
        on its other side (patterns.py). A few memchr scans and a strip turn away a long
        stretch of one letter (50 MB, o200k: 12.8 s to 3.8 s, docs/performance.md) or of
        spaces before the regex, which costs 20-370 ns a byte where it finds nothing."""
        lo = max(0, lo)
        return (any(text.find(c, lo, hi) >= 0 for c in self.ascii_space)
                and len(text[lo:hi].strip(self.ascii_space)) > 0)

    def next_edge(self, f, pos: int, end: int) -> int:
        """The first safe edge at or after pos and before end in file f (whose bytes run at
        least to end), or -1 if none."""
        if self.none:
            return -1
        behind = max(self.behind, self.reach)
        start, step = pos, _FIRST_BLOCK
        while start < end:
            lo = max(0, start - behind)
            f.seek(lo)
            block = f.read(start - lo + step + behind)
            i = self.safe_in(block, start - lo, min(start + step, end) - lo)
            if i >= 0:
                return lo + i
            start += step
            step = min(2 * step, _MAX_BLOCK)
        return -1

    def first_edge(self, text: AnyStr, pos: int, end: int) -> int:
        """The first safe edge of text (held whole) at or after pos and before end, or -1."""
        if self.none:
            return -1
        start, step = pos, _FIRST_BLOCK
        while start < end:
            i = self.safe_in(text, start, min(start + step, end))
            if i >= 0:
                return i
            start += step
            step = min(2 * step, _MAX_BLOCK)
        return -1

    def last_edge(self, text: AnyStr, start: int = 0) -> int:
        """The last safe edge of text at or after start, or 0 if there is none. text may
        continue, so only edges that more text cannot take back count: none within the
        longest special token of the end. Searches back from the end in growing blocks."""
        if self.none:
            return 0
        hi, step = min(len(text), len(text) - self.behind + 1), _LAST_BLOCK
        while hi > start:
            lo = max(start, hi - step)
            i = self.safe_in(text, lo, hi, last=True)
            if i > 0:
                return i
            hi, step = lo, 2 * step
        return 0

    def plan_text(self, text: AnyStr, parts: int) -> list[tuple[int, int]]:
        """Text held whole (str or bytes) cut into about `parts` parts on safe edges, for
        threads. A cut is looked for in the eighth of a part past where it would fall, and left
        out if not there: text with few edges costs the edge regex up to 350 ns a byte, 20
        times what encoding it costs (o200k's "\\n/" over and over: a 2 MB text took 0.8 s to
        cut, 0.13 s to encode), and a part that runs on costs the threads' balance only, the
        text being held whole already."""
        target = -(-len(text) // parts)
        return _plan(len(text), target, max(1, target // 8),
                     lambda pos, end: self.first_edge(text, pos, end))

    def plan(self, f, size: int, target: int) -> list[tuple[int, int]]:
        """Byte ranges (start, end) of about `target` bytes of file f, cut on safe edges: each
        at the first edge past where it would fall, however far, since a range is read whole
        (its memory is bounded by the target and the longest stretch without an edge)."""
        return _plan(size, target, size, lambda pos, end: self.next_edge(f, pos, end))


def _plan(size: int, target: int, window: int, edge_in) -> list[tuple[int, int]]:
    """Cuts of size bytes about target apart: each the first edge edge_in(pos, end) finds in
    the window bytes from where the cut would fall; where it finds none, the part runs on to
    the next."""
    cuts, pos = [0], target
    while pos < size:
        end = min(size, pos + window)
        edge = edge_in(pos, end)
        if edge < 0:
            if end == size:
                break
            pos += target
            continue
        cuts.append(edge)
        pos = edge + target
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


STREAM_BATCH = 1 << 16  # characters cut_stream gathers before it looks for an edge


def cut_stream(chunks: Iterable[str], edges: Edges, what: str = "the stream"
               ) -> Iterator[str]:
    """A stream of str chunks as pieces cut at safe edges, so that pre-tokenizing each piece
    apart gives the pre-tokens of the whole. Text is gathered until there is a batch, then cut
    at its last safe edge; the rest waits for more text. Linear in the input whatever its
    chunking: each character is searched for edges about once, and when a batch has no edge
    the next try waits until the text has doubled. Holds the text since the last edge plus
    one batch; with no edge at all (a pattern split by the regex module and no special
    tokens), the whole stream."""
    pending: list[str] = []  # text not cut yet, in order
    size = 0  # its length
    searched = 0  # pending text before this offset holds no safe edge
    next_try = STREAM_BATCH  # the size at which to look for an edge again
    for chunk in chunks:
        if not isinstance(chunk, str):
            raise TypeError(f"{what} must give str, not {type(chunk).__name__}")
        pending.append(chunk)
        size += len(chunk)
        if size < next_try:
            continue
        text = "".join(pending)
        cut = edges.last_edge(text, searched)
        if cut > 0:
            yield text[:cut]
            text = text[cut:]
        # edges within the longest special token of the end may still change
        searched = max(0, len(text) - edges.behind - 1)
        next_try = max(len(text) + STREAM_BATCH, 2 * len(text) if cut == 0 else 0)
        pending, size = [text], len(text)
    if size:
        yield "".join(pending)


def chunk_target(size: int, num_workers: int) -> int:
    """Aim for several chunks per worker (load balance), each small enough to bound memory."""
    return min(max(size // (4 * num_workers), 1 << 20), 16 << 20)


def plan_file(path: str, edges: Edges, target: int) -> list[tuple[int, int]]:
    """A file cut into byte ranges of about `target` bytes on safe edges."""
    with open_binary(path) as f:
        return edges.plan(f, file_size(path), target)


