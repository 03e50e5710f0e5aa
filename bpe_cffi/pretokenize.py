"""Text -> pre-tokens (SPEC 1.2-1.3, 2.1-2.2): cut at special tokens, then split with the regex.

Everything here works on str and is shared by training and encoding.
"""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import numpy as np
import regex

from ._lib import ffi, lib

#: GPT-2's pre-tokenization pattern (SPEC 1.3), the default everywhere.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


#: Patterns proven unit-local (csrc/units.h): chunk edges and the fast path rely on it.
UNIT_LOCAL_PATTERNS = frozenset({GPT2_PATTERN})


def resolve_fast(fast: bool | None, pattern: str) -> bool:
    """fast=None: the unit fast path whenever the pattern allows it; True: insist on it."""
    local = pattern in UNIT_LOCAL_PATTERNS
    if fast is None:
        return local
    if fast and not local:
        raise ValueError("fast=True needs GPT-2's pattern (the only one proven unit-local); "
                         "use fast=None or fast=False with a custom pattern")
    return bool(fast)


def compile_pattern(pattern: str) -> "regex.Pattern[str]":
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    try:
        return regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"invalid pre-tokenization pattern {pattern!r}: {e}") from None


def unique_specials(special_tokens: Iterable[str] | None) -> list[str]:
    """Validates special tokens and removes duplicates, keeping the first occurrence's place."""
    if special_tokens is None:
        return []
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError("special_tokens must be a list of str, not a single "
                        f"{type(special_tokens).__name__}")
    out: list[str] = []
    for s in special_tokens:
        if not isinstance(s, str):
            raise TypeError(f"special tokens must be str, got {type(s).__name__}: {s!r}")
        if not s:
            raise ValueError("a special token cannot be the empty string")
        if s not in out:
            out.append(s)
    return out


def special_splitter(specials: Sequence[str]) -> "regex.Pattern[str] | None":
    """A pattern matching any special token, longest first where one is a prefix of another."""
    if not specials:
        return None
    ordered = sorted(specials, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def split_on_specials(text: str, splitter) -> Iterator[tuple[str, bool]]:
    """Yields (piece, is_special) in order; empty text pieces are left out."""
    if splitter is None:
        if text:
            yield text, False
        return
    pos = 0
    for m in splitter.finditer(text):
        if m.start() > pos:
            yield text[pos:m.start()], False
        yield m.group(), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], False


class ByteSpecials:
    """Finds special tokens in UTF-8 bytes (the fast paths work on bytes). Leftmost-longest
    matching over UTF-8 is the same as over str, so the pieces are those of split_on_specials.
    """

    def __init__(self, specials: Sequence[str]):
        encoded = sorted((s.encode("utf-8") for s in specials), key=len, reverse=True)
        # One special, the usual case, is found faster in C (memchr) than by a regex.
        self._single = encoded[0] if len(encoded) == 1 else None
        self._regex = (regex.compile(b"|".join(regex.escape(b) for b in encoded))
                       if len(encoded) > 1 else None)

    def spans(self, data: bytes) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
        """The pieces of data between special tokens, as int64 (starts, ends), and the special
        tokens found, in order: piece i is followed by found[i] (the last piece by nothing)."""
        if self._single is not None:
            at = find_all(data, self._single)
            starts = np.concatenate(([0], at + len(self._single)))
            ends = np.concatenate((at, [len(data)]))
            return starts, ends, [self._single] * len(at)
        starts, ends, found = self.few_spans(data)
        return np.array(starts, np.int64), np.array(ends, np.int64), found

    def few_spans(self, data: bytes) -> tuple[list[int], list[int], list[bytes]]:
        """spans as lists, for a short text: there a few bytes.find calls cost less than
        setting up the arrays for C."""
        starts, ends, found = [0], [], []
        if self._single is not None:
            single = self._single
            at = data.find(single)
            while at >= 0:
                ends.append(at)
                found.append(single)
                starts.append(at + len(single))
                at = data.find(single, at + len(single))
        elif self._regex is not None:
            for m in self._regex.finditer(data):
                ends.append(m.start())
                found.append(m.group())
                starts.append(m.end())
        ends.append(len(data))
        return starts, ends, found


def find_all(data: bytes, needle: bytes) -> np.ndarray:
    """int64 starts of the leftmost non-overlapping occurrences of needle in data (in C)."""
    cap = min(len(data) // len(needle) + 1, 1 << 16)
    out = np.empty(cap, np.int64)
    parts, pos = [], 0
    while True:
        k = lib.bpe_find_all(ffi.from_buffer("uint8_t[]", data), len(data), pos,
                             needle, len(needle), ffi.from_buffer("int64_t[]", out), cap)
        parts.append(out[:k].copy())
        if k < cap:
            return np.concatenate(parts)
        pos = int(out[k - 1]) + len(needle)
