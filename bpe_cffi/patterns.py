"""Pre-tokenization patterns: the families with a scanner in C, and the regex for any other.

A pattern string that patterns.py recognises as a family's (see PATTERNS) is split by that
family's C scanner, which gives exactly regex.finditer's pre-tokens; any other pattern is split
by the `regex` module itself. Both paths give the same ids; the C one is many times faster.
Where a cut of the text is safe (for processes, threads and encode_iterable) depends on the
family: see csrc/units.h.
"""
from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import regex

from ._lib import check, ffi, lib

#: GPT-2's pre-tokenization pattern (docs/spec.md), the default everywhere.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

_CL100K = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++"""
           r"""[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")
_CL100K_HF = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
              r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
_O200K_UPPER = r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"""
_O200K_LOWER = r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]"""
_O200K_CONTRACTION = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""

#: The pattern of each family by name, exactly as models and projects publish it. A name is
#: accepted wherever a pattern is (pattern="o200k", --pattern o200k).
PATTERNS = {
    "gpt2": GPT2_PATTERN,
    # tiktoken's r50k_base: possessive, with \s++$; the same pre-tokens as gpt2
    "gpt2_tiktoken": (r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$"""
                      r"""|\s+(?!\S)|\s"""),
    # GPT-4 as first published; rustbpe's default
    "cl100k": _CL100K,
    # cl100k_base as tiktoken ships it: \s++$ takes trailing whitespace whole
    "cl100k_tiktoken": (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
                        r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""),
    # cl100k as Hugging Face tokenizer.json files carry it (Llama 3)
    "cl100k_hf": _CL100K_HF,
    # Qwen2 and Qwen3: the Hugging Face form with single digits
    "qwen2": _CL100K_HF.replace(r"\p{N}{1,3}", r"\p{N}"),
    # nanochat: the first cl100k form with digits in pairs
    "nanochat": _CL100K.replace(r"\p{N}{1,3}", r"\p{N}{1,2}"),
    # GPT-4o: tiktoken's o200k_base
    "o200k": "|".join([
        _O200K_UPPER + "*" + _O200K_LOWER + "+" + _O200K_CONTRACTION,
        _O200K_UPPER + "+" + _O200K_LOWER + "*" + _O200K_CONTRACTION,
        r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""", r"""\s+"""]),
}

N_CODE_POINTS = 0x110000  # entries of the class table (csrc/scan.h)

# What a family's scanner reads of the class byte (csrc/scan.h); a table computes only that,
# since each pass over all code points costs 8-20 ms at start-up.
BASE, FOLDS, CASES = 0, 1, 2  # the base classes; and the contractions' letters; and o200k's

# Safe edges (csrc/units.h says why they are safe): text then whitespace, in every family; in
# cl100k's and o200k's not \r or \n after what is neither a letter nor a number, but a line
# break then text (o200k: not /, which its punctuation carries along). "Text" is any character
# that is not whitespace (\s): the same edges in any script, so that text without ASCII beside
# its line breaks (Japanese lines ending in 。) is cut as often as English. Each family has a
# regex on UTF-8 bytes (files, UTF-8 text) and one on str (streams). On bytes, a character
# outside ASCII ends in a continuation byte and starts with a lead byte: whitespace among those
# is the 19 code points \s matches above U+007F, spelled out. A letter or number before a line
# break is checked on ASCII alone there (fewer edges, never a wrong one). The whitespace at or
# just before each edge is ASCII (Edges skips blocks without any).
# U+0085 U+00A0, U+1680, U+2000-U+200A U+2028 U+2029 U+202F, U+205F, U+3000:
_UTF8_SPACE = (rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f"
               rb"|\xe3\x80\x80")
_UTF8_TEXT_BEFORE = (rb"(?:(?<=[\x00-\x08\x0e-\x1f\x21-\x7f])|(?<=[\x80-\xbf])(?<!"
                     + _UTF8_SPACE + rb"))")


def _utf8_text_at(ascii_text: bytes) -> bytes:
    """A look-ahead on UTF-8 for a character that is not whitespace: one of the class
    ascii_text, or the lead byte of a character outside ASCII that is not whitespace."""
    return rb"(?=[" + ascii_text + rb"]|(?!" + _UTF8_SPACE + rb")[\xc2-\xf4])"


@dataclass(frozen=True)
class EdgePatterns:
    """A family's safe edges as a regex on UTF-8 bytes and as one on str; code: the family's
    BPE_SCAN_* code, with which csrc/edges.c finds the edges of the regex on bytes."""
    utf8: bytes
    text: str
    code: int


def _line_break_edges(ascii_after: bytes, text_after: str, code: int) -> EdgePatterns:
    """cl100k's and o200k's edges: text then whitespace but \r or \n; a letter or number then
    \r or \n; \r or \n then what is not whitespace (the ASCII of it: a class's contents,
    ascii_after; on str: text_after)."""
    return EdgePatterns(
        _UTF8_TEXT_BEFORE + rb"(?=[\t\x0b\x0c ])|(?<=[A-Za-z0-9])(?=[\r\n])|(?<=[\r\n])"
        + _utf8_text_at(ascii_after),
        r"(?<=\S)(?=[\t\x0b\x0c ])|(?<=[\p{L}\p{N}])(?=[\r\n])|(?<=[\r\n])(?="
        + text_after + ")", code)


_GPT2_EDGES = EdgePatterns(_UTF8_TEXT_BEFORE + rb"(?=[\t\n\x0b\x0c\r ])",
                           r"(?<=\S)(?=[\t\n\x0b\x0c\r ])", lib.BPE_SCAN_GPT2)
_CL100K_EDGES = _line_break_edges(rb"\x00-\x08\x0e-\x1f\x21-\x7f", r"\S", lib.BPE_SCAN_CL100K)
_O200K_EDGES = _line_break_edges(rb"\x00-\x08\x0e-\x1f\x21-\x2e\x30-\x7f",
                                 r"[^\s/]",  # / is taken along by the punctuation before
                                 lib.BPE_SCAN_O200K)


@dataclass(frozen=True)
class Family:
    """A pattern family with a C scanner: what csrc/scan.h needs to build one."""
    name: str
    code: int  # BPE_SCAN_*
    classes: int  # what its scanner reads of the class table (char_classes)
    edges: EdgePatterns  # where files, long texts and streams may be cut
    max_digits: int = 3
    space_run_ends: bool = False
    #: The same pre-tokens, written as Hugging Face tokenizers reads it the way regex does (it
    #: takes \p{N}{1,3}+ for (\p{N}{1,3})+); None where GPT-2's ByteLevel serves.
    hf_pattern: str | None = None


def _expand(template: str) -> list[str]:
    """Every string a template stands for: each {+} a possessive + or nothing (put only after
    a quantifier whose match nothing later in its alternative can take back, where + changes
    nothing), each [[a||b]] a choice between spellings that match alike."""
    forms = [""]
    for piece in regex.split(r"(\{\+\}|\[\[.*?\]\])", template):
        if piece == "{+}":
            options = ["", "+"]
        elif piece.startswith("[["):
            options = [o for choice in piece[2:-2].split("||") for o in _expand(choice)]
        else:
            options = [piece]
        forms = [f + o for f in forms for o in options]
    return forms


def _known_patterns() -> dict[str, Family]:
    """Every pattern string a scanner serves: each family's published forms, and the forms a
    user is likely to paste that match alike (possessive or not, one whitespace character or
    a run last, ...)."""
    known: dict[str, Family] = {}
    gpt2 = Family("gpt2", lib.BPE_SCAN_GPT2, BASE, _GPT2_EDGES)
    for s in _expand(r"'(?:[sdmt]|ll|ve|re)| ?{+}\p{L}+{+}| ?{+}\p{N}+{+}"
                     r"| ?{+}[^\s\p{L}\p{N}]+{+}[[|\s+(?!\S)|\s+{+}||"
                     r"|\s+{+}$|\s+(?!\S)|\s||"
                     r"|\s+{+}$|\s+(?!\S)|\s+{+}]]"):
        known[s] = gpt2
    names = {(3, False): "cl100k", (3, True): "cl100k_tiktoken", (1, False): "qwen2",
             (2, False): "nanochat"}
    for digits, number in ((3, r"\p{N}{1,3}{+}"), (2, r"\p{N}{1,2}{+}"), (1, r"\p{N}")):
        for ends, tail in ((False, r"\s*[\r\n][[||+||++]]|\s+(?!\S)|\s+{+}"),
                           (True, r"\s+{+}[[$||\Z]]|\s*[\r\n][[||+||++]]|\s+(?!\S)"
                                  r"|\s[[||+||++]]")):
            name = names.get((digits, ends), f"cl100k-{digits}" + ("-tiktoken" if ends else ""))
            hf = _CL100K_HF.replace(r"\p{N}{1,3}", number.replace("{+}", ""))
            if ends:  # Oniguruma's $ ends every line, its \Z the text (or its last line
                # break): regex's $. After \s+, which takes a last line break too, \Z and $
                # match alike in regex, so that form is this family's as well.
                hf = hf.replace(r"|\s*[\r\n]+", r"|\s+\Z|\s*[\r\n]+")
            family = Family(name, lib.BPE_SCAN_CL100K, FOLDS, _CL100K_EDGES, digits, ends, hf)
            for s in _expand(r"[['(?i:[sdmt]|ll|ve|re)||(?i:'s|'t|'re|'ve|'m|'ll|'d)]]"
                             r"|[^\r\n\p{L}\p{N}]?{+}\p{L}+{+}|" + number
                             + r"| ?{+}[^\s\p{L}\p{N}]+{+}[\r\n]*{+}|" + tail):
                known[s] = family
    o200k = Family("o200k", lib.BPE_SCAN_O200K, CASES, _O200K_EDGES,
                   hf_pattern=PATTERNS["o200k"])
    contraction = _O200K_CONTRACTION + "{+}"
    for s in _expand(_O200K_UPPER + "*" + _O200K_LOWER + "+" + contraction + "|"
                     + _O200K_UPPER + "+" + _O200K_LOWER + "*" + contraction
                     + r"|\p{N}{1,3}{+}| ?{+}[^\s\p{L}\p{N}]+{+}[\r\n/]*{+}|\s*[\r\n]+{+}"
                     r"|\s+(?!\S)|\s+{+}"):
        known[s] = o200k
    return known


_KNOWN = _known_patterns()


def family_of(pattern: str) -> Family | None:
    """The family whose scanner serves this pattern string, if any."""
    return _KNOWN.get(pattern)


def _name_key(name: str) -> str:
    """A name as _NEAR_NAMES knows it: lower case, without spaces, - and _."""
    return "".join(c for c in name.lower() if c not in " -_\t\n")


# Names a user may mean, to the pattern name to suggest: each name's own spellings, the
# names of tiktoken's encodings, and the models' (gigatoken names cl100k "gpt4").
_NEAR_NAMES = {**{_name_key(n): n for n in PATTERNS},
               "cl100kbase": "cl100k_tiktoken", "o200kbase": "o200k",
               "r50kbase": "gpt2_tiktoken", "p50kbase": "gpt2_tiktoken",
               "gpt4": "cl100k", "gpt4o": "o200k", "llama3": "cl100k_hf"}


def resolve_pattern(pattern: str) -> str:
    """A family's name (a key of PATTERNS) becomes its pattern; a pattern string stays."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    if pattern in PATTERNS:
        return PATTERNS[pattern]
    if not pattern:
        raise ValueError("the pre-tokenization pattern is empty: it would match no text")
    # A name mistyped would be a regex that matches only itself, and all other text would
    # get no pre-token at all.
    name = _NEAR_NAMES.get(_name_key(pattern))
    if name is not None:
        raise ValueError(f"{pattern!r} is no pattern name (did you mean {name!r}? names: "
                         f"{', '.join(PATTERNS)})")
    if regex.fullmatch(r"[A-Za-z0-9_-]+", pattern):  # a name, surely: as a regex, only itself
        raise ValueError(f"{pattern!r} is no pattern name (names: {', '.join(PATTERNS)}); as "
                         "a regex it would match only its own text, and give all other text "
                         "no pre-token")
    return pattern


def compile_pattern(pattern: str) -> "regex.Pattern[str]":
    """The compiled regex, with a ValueError that names a bad pattern."""
    try:
        pattern.encode("utf-8")  # tokenizer.json holds it as UTF-8: no lone surrogate
    except UnicodeEncodeError as e:
        raise ValueError(f"invalid pre-tokenization pattern {pattern!r}: {e.reason} at "
                         f"character {e.start} (not valid Unicode text)") from None
    try:
        return regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"invalid pre-tokenization pattern {pattern!r}: {e}") from None
    except RecursionError:  # the regex module parses nested groups by recursion
        raise ValueError(f"pre-tokenization pattern {_shown(pattern)} nests its groups too "
                         "deeply for the regex module to compile") from None
    except MemoryError:  # it expands nested counted repeats ((?:a{1000}){1000}) when compiling
        raise ValueError(f"pre-tokenization pattern {_shown(pattern)} takes more memory to "
                         "compile than could be had (the regex module expands nested counted "
                         "repeats)") from None


def _shown(pattern: str) -> str:
    """A pattern as an error message shows it: its first 100 characters."""
    return repr(pattern) if len(pattern) <= 100 else f"{pattern[:100]!r}..."


class Pretokenizer:
    """How a pattern turns text into pre-tokens: its family's C scanner when the pattern is a
    family's (`family`), else the regex (`family` None; the C side then takes each pre-token
    the regex found as one piece)."""

    def __init__(self, pattern: str):
        self.pattern = resolve_pattern(pattern)
        self.regex = compile_pattern(self.pattern)
        self.family = family_of(self.pattern)
        self.scanner = _scanner(self.family)

    def pre_tokens(self, text: str) -> list[str]:
        """The pre-tokens of text by the regex, as regex.finditer finds them: findall, the
        faster, when the pattern has no group (with groups, findall returns the groups)."""
        if self.regex.groups == 0:
            return self.regex.findall(text)
        return [m.group() for m in self.regex.finditer(text)]

    def pre_token_batches(self, pieces: Iterable[str], size: int) -> Iterator[list[str]]:
        """The pre-tokens of pieces of text by the regex, in order, in lists of about size
        (a piece longer than size characters is matched lazily, a size of matches at a time,
        so that its list of pre-tokens is never whole in memory)."""
        batch: list[str] = []
        for piece in pieces:
            if len(piece) <= size:
                batch += self.pre_tokens(piece)
            else:
                matches = self.regex.finditer(piece)
                # m[0] in a comprehension: map(methodcaller("group"), ...) took twice as long
                while part := [m[0] for m in itertools.islice(matches, size)]:
                    batch += part
                    if len(batch) >= size:
                        yield batch
                        batch = []
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch

    @property
    def name(self) -> str:
        """The family's name, or "regex" for a pattern split by the regex module."""
        return self.family.name if self.family else "regex"

    @property
    def edges(self) -> EdgePatterns | None:
        """The safe edges' patterns, or None (only special tokens cut)."""
        return self.family.edges if self.family else None


def pretokenizer(pattern: str) -> Pretokenizer:
    """The Pretokenizer of a pattern (or a family's name), made once per process."""
    if not isinstance(pattern, str):  # before the cache, which would say "unhashable"
        raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
    return _cached_pretokenizer(pattern)


@functools.lru_cache(maxsize=16)
def _cached_pretokenizer(pattern: str) -> Pretokenizer:
    return Pretokenizer(pattern)


# The class bits each level keeps (csrc/scan.h): base classes in bits 0-1, o200k's case
# classes in bits 2-3, the contractions' letters in bits 4-7.
_LEVEL_BITS = {BASE: 0x03, FOLDS: 0xF3, CASES: 0xFF}

# The table at level CASES, computed once (compute_char_classes) with one release of `regex`
# and shipped run-length coded: computing it takes 25-35 ms, a third of loading a 50 000-token
# tokenizer. Used only with that release of `regex` (Unicode's tables change with releases);
# with any other the table is computed. scripts/char_classes.py writes the file.
CLASS_TABLE_FILE = os.path.join(os.path.dirname(__file__), "data", "char_classes.bin")
_CLASS_TABLE_MAGIC = b"bpe_cffi char classes, regex "


def write_class_table(path: str) -> None:
    """Writes the installed regex's table at level CASES to path, run-length coded: a line
    naming the regex release, the number of runs (uint32), their lengths (uint32) and their
    class bytes."""
    table = compute_char_classes(CASES)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(table)) + 1])
    lengths = np.diff(np.append(starts, len(table))).astype("<u4")
    with open(path, "wb") as f:
        f.write(_CLASS_TABLE_MAGIC + regex.__version__.encode("ascii") + b"\n")
        f.write(np.array([len(starts)], "<u4").tobytes() + lengths.tobytes()
                + table[starts].tobytes())


def read_class_table(path: str = CLASS_TABLE_FILE) -> np.ndarray | None:
    """The table at level CASES written to path by write_class_table, if the installed regex
    made it, else None (also for a missing or damaged file)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head, _, body = data.partition(b"\n")
    if head != _CLASS_TABLE_MAGIC + regex.__version__.encode("ascii") or len(body) < 4:
        return None
    n = int(np.frombuffer(body, "<u4", 1)[0])
    if len(body) != 4 + 5 * n:
        return None
    lengths = np.frombuffer(body, "<u4", n, 4)
    if int(lengths.sum(dtype=np.int64)) != N_CODE_POINTS:
        return None
    return np.repeat(np.frombuffer(body, np.uint8, n, 4 + 4 * n), lengths)


@functools.lru_cache(maxsize=3)
def char_classes(level: int = CASES) -> np.ndarray:
    """One class byte per code point, as csrc/scan.h lays it out, the bits of a level (see
    compute_char_classes): the shipped table's when it matches the installed regex."""
    shipped = read_class_table()
    if shipped is None:
        return compute_char_classes(level)
    return shipped & _LEVEL_BITS[level]


def compute_char_classes(level: int = CASES) -> np.ndarray:
    """One class byte per code point, as csrc/scan.h lays it out, computed with the regex module
    so that C and regex agree on the Unicode version: the base classes, and from level FOLDS on
    the letters that match a contraction's without case, and at CASES o200k's case classes."""
    def text_of(code_points: np.ndarray) -> str:
        return code_points.tobytes().decode("utf-32-le")

    # Each pattern below matches code point by code point, and only assigned ones: one pass
    # over all 1.1 M code points finds those (~0.3 M), and the others run over them alone
    # (each pass over all took ~5 ms, 56 ms in all). Surrogates are "other" (Cs), and left
    # out of the text: a str of them is made on a slow path.
    every = np.concatenate([np.arange(0xD800, dtype=np.uint32),
                            np.arange(0xE000, N_CODE_POINTS, dtype=np.uint32)])
    spans = [m.span() for m in regex.finditer(r"\P{Cn}+", text_of(every))]
    at = np.concatenate([every[a:b] for a, b in spans])  # at[i]: the i-th such code point
    some = text_of(at)

    def where(pattern: str) -> np.ndarray:
        """The code points the pattern matches."""
        return np.concatenate([at[:0]] + [at[a:b] for a, b in
                                          (m.span() for m in regex.finditer(pattern, some))])

    classes = np.full(N_CODE_POINTS, 3, np.uint8)  # BASE_OTHER, then cleared where it is not
    for pattern, base in ((r"\p{L}+", 0), (r"\p{N}+", 1), (r"\s+", 2)):
        classes[where(pattern)] = base
    if level >= CASES:
        for pattern, bits in ((r"\p{Ll}+", 1 << 2), (r"\p{Lm}+", 2 << 2), (r"\p{Lo}+", 2 << 2),
                              (r"\p{M}+", 1 << 2)):  # (the last: an "other" that is a mark)
            classes[where(pattern)] |= bits
    if level >= FOLDS:
        for m in regex.finditer("(?i:[sdmtlver])", some):
            fold = next(k for k, letter in enumerate("sdmtlver", 1)
                        if regex.fullmatch(f"(?i:{letter})", m.group()))
            classes[at[m.start()]] |= fold << 4
    return classes


@functools.lru_cache(maxsize=8)
def _scanner(family: Family | None):
    """The C scanner of a family (BPE_SCAN_PIECES for None), made once per process."""
    out = ffi.new("bpe_scanner **")
    if family is None:
        check(lib.bpe_scanner_new(lib.BPE_SCAN_PIECES, 1, 0, ffi.NULL, 0, out), "bpe_scanner_new")
    else:
        table = char_classes(family.classes)
        check(lib.bpe_scanner_new(family.code, family.max_digits, int(family.space_run_ends),
                                  ffi.from_buffer("uint8_t[]", table), N_CODE_POINTS, out),
              "bpe_scanner_new")
    return ffi.gc(out[0], lib.bpe_scanner_free)
