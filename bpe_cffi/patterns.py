"""Pre-tokenization patterns: the families with a scanner in C, and the regex for any other.

A pattern string that patterns.py recognises as a family's (see PATTERNS) is split by that
family's C scanner, which gives exactly regex.finditer's pre-tokens; any other pattern is split
by the `regex` module itself. Both paths give the same ids; the C one is many times faster.
Where a cut of the text is safe (for processes, threads and encode_iterable) depends on the
family: see csrc/units.h.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import regex

from ._lib import check, ffi, lib

#: GPT-2's pre-tokenization pattern (docs/spec.md), the default everywhere.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: The pattern of each family by name; a name is accepted wherever a pattern is.
PATTERNS = {"gpt2": GPT2_PATTERN}

N_CODE_POINTS = 0x110000  # entries of the class table (csrc/scan.h)


@dataclass(frozen=True)
class Family:
    """A pattern family with a C scanner: what csrc/scan.h needs to build one."""
    name: str
    code: int  # BPE_SCAN_*
    max_digits: int = 3
    space_run_ends: bool = False
    #: Safe edges on ASCII bytes (csrc/units.h), for cutting files and long texts.
    edges: bytes = rb"(?<=[\x21-\x7e])(?=[\t\n\x0b\x0c\r ])"


_GPT2 = Family("gpt2", lib.BPE_SCAN_GPT2)

# Every string here is a family's pattern exactly; tests check each against regex.
_KNOWN = {
    GPT2_PATTERN: _GPT2,
    # tiktoken's r50k_base: possessive, with \s++$; the same pre-tokens (scan_gpt2.c says why)
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""": _GPT2,
}


def resolve_pattern(pattern: str) -> str:
    """A family's name (a key of PATTERNS) becomes its pattern; a pattern string stays."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    return PATTERNS.get(pattern, pattern)


def compile_pattern(pattern: str) -> "regex.Pattern[str]":
    """The compiled regex, with a ValueError that names a bad pattern."""
    try:
        return regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"invalid pre-tokenization pattern {pattern!r}: {e}") from None


class Pretokenizer:
    """How a pattern turns text into pre-tokens: its family's C scanner when the pattern is a
    family's (`family`), else the regex (`family` None; the C side then takes each pre-token
    the regex found as one piece)."""

    def __init__(self, pattern: str):
        self.pattern = resolve_pattern(pattern)
        self.regex = compile_pattern(self.pattern)
        self.family = _KNOWN.get(self.pattern)
        self.scanner = _scanner(self.family)

    @property
    def name(self) -> str:
        """The family's name, or "regex" for a pattern split by the regex module."""
        return self.family.name if self.family else "regex"

    @property
    def edges(self) -> bytes | None:
        """The safe edges' pattern on UTF-8 bytes, or None (only special tokens cut)."""
        return self.family.edges if self.family else None


@functools.lru_cache(maxsize=16)
def pretokenizer(pattern: str) -> Pretokenizer:
    """The Pretokenizer of a pattern (or a family's name), made once per process."""
    return Pretokenizer(pattern)


# The class byte of csrc/scan.h: (bits, regex) for each class, the first that matches wins.
_CLASSES = ((0, r"[\p{Lu}\p{Lt}]"), (1 << 2, r"\p{Ll}"), (2 << 2, r"[\p{Lm}\p{Lo}]"), (1, r"\p{N}"),
            (2, r"\s"), (3 | 1 << 2, r"\p{M}"))


@functools.lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """One class byte per code point, as csrc/scan.h lays it out, computed with the regex module
    so that C and regex agree on the Unicode version (about 0.1 s, once per process)."""
    every = np.arange(N_CODE_POINTS, dtype=np.uint32).tobytes().decode("utf-32-le",
                                                                        "surrogatepass")
    classes = np.full(N_CODE_POINTS, 3, np.uint8)  # BASE_OTHER
    for bits, pattern in reversed(_CLASSES):  # so that the first to match is written last
        for m in regex.finditer(pattern + "+", every):
            classes[m.start():m.end()] = bits
    for fold, letter in enumerate("sdmtlver", 1):  # the letters of the contractions
        for m in regex.finditer(f"(?i:{letter})", every):
            classes[m.start()] |= fold << 4
    return classes


@functools.lru_cache(maxsize=8)
def _scanner(family: Family | None):
    """The C scanner of a family (BPE_SCAN_PIECES for None), made once per process."""
    out = ffi.new("bpe_scanner **")
    if family is None:
        check(lib.bpe_scanner_new(lib.BPE_SCAN_PIECES, 1, 0, ffi.NULL, 0, out), "bpe_scanner_new")
    else:
        check(lib.bpe_scanner_new(family.code, family.max_digits, int(family.space_run_ends),
                                  ffi.from_buffer("uint8_t[]", char_classes()), N_CODE_POINTS,
                                  out), "bpe_scanner_new")
    return ffi.gc(out[0], lib.bpe_scanner_free)
