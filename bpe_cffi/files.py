"""Tokenizer files (docs/spec.md), all written atomically (temporary file + rename):

- vocab.json + merges.txt: GPT-2's format. Each byte is shown as a printable character (GPT-2's
  bytes_to_unicode table), so any byte string survives JSON and a space-separated merges file.
- tokenizer.json: a complete Hugging Face `tokenizers` tokenizer (BPE model, ByteLevel
  pre-tokenizer and decoder, special tokens as added tokens).
- tokenizer.tiktoken: tiktoken's rank file, "base64(token) rank" per line (no specials, no
  merges: tiktoken derives merges from ranks, and so does load_tiktoken).
"""
from __future__ import annotations

import array
import base64
import binascii
import codecs
import contextlib
import errno
import itertools
import json
import operator
import os
import re
import secrets
import signal
import stat
import threading
import warnings
import zipfile
import zlib
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

import numpy as np

from .patterns import GPT2_PATTERN, PATTERNS, family_of, pretokenizer, resolve_pattern
from .sources import first_bad_utf8
from .specials import add_special_ids, place_specials, special_only_ids, unique_specials

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


class MergeParts:
    """Merges as one buffer: merge r's left token is data[at[2r]:at[2r + 1]] and its right
    token data[at[2r + 1]:at[2r + 2]], so the token it makes is data[at[2r]:at[2r + 2]]. Files
    load into this form, which C reads as is (csrc/merge_ids.c); a bytes object per token is
    made only when the pairs are asked for."""

    def __init__(self, data: bytes, at: np.ndarray):
        self.data, self.at = data, at

    @classmethod
    def of(cls, pairs: Iterable[tuple[bytes, bytes]]) -> "MergeParts":
        """From (left, right) pairs of bytes; a TypeError names the first that is not one."""
        pairs = list(pairs)
        if set(map(type, pairs)) <= {tuple, list} and set(map(len, pairs)) <= {2}:
            flat = list(itertools.chain.from_iterable(pairs))
            if set(map(type, flat)) <= {bytes}:
                return cls(b"".join(flat), offsets_of(flat))
        r = next(r for r, m in enumerate(pairs) if type(m) not in (tuple, list)
                 or len(m) != 2 or not all(isinstance(t, bytes) for t in m))
        raise TypeError(f"merge {r} must be a pair of bytes, got {pairs[r]!r}")

    @classmethod
    def join(cls, parts: list["MergeParts"]) -> "MergeParts":
        """The merges of each of parts, in order."""
        shifts = itertools.accumulate((len(p.data) for p in parts[:-1]), initial=0)
        at = [p.at[:-1] + shift for p, shift in zip(parts, shifts)]
        data = b"".join(p.data for p in parts)
        return cls(data, np.concatenate(at + [np.array([len(data)], np.int64)]))

    def __len__(self) -> int:
        return (len(self.at) - 1) // 2

    def pair(self, r: int) -> tuple[bytes, bytes]:
        """Merge r's (left, right) pair of bytes."""
        a, b, c = self.at[2 * r:2 * r + 3].tolist()
        return self.data[a:b], self.data[b:c]

    def pairs(self) -> Merges:
        """The merges as (left, right) pairs of bytes, by rank."""
        tokens = split_at(self.data, self.at)
        return list(zip(tokens[0::2], tokens[1::2]))


def offsets_of(items: list) -> np.ndarray:
    """0, then where each of items, joined back to back, ends."""
    at = np.zeros(len(items) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, items), np.int64, len(items)), out=at[1:])
    return at


def split_at(data: bytes, at: np.ndarray) -> list[bytes]:
    """The pieces data[at[i]:at[i + 1]], the inverse of joining items with offsets_of."""
    at = at.tolist()
    return list(map(data.__getitem__, map(slice, at[:-1], at[1:])))


def _gpt2_byte_to_char() -> dict[int, str]:
    """GPT-2's table: printable bytes map to themselves, the rest to U+0100 onwards."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_CHAR = _gpt2_byte_to_char()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


# latin-1 decodes each byte to the code point of its value, which this table maps to the
# byte's character: 2.3x faster than joining the characters byte by byte (realmix's 50 000
# tokens: 32 against 74 ms).
_BYTE_CHARS = str.maketrans({chr(b): c for b, c in BYTE_TO_CHAR.items()})


def token_to_str(token: bytes) -> str:
    """A token's bytes as GPT-2's printable characters (one per byte)."""
    return token.decode("latin-1").translate(_BYTE_CHARS)


# GPT-2's byte characters are all in the Basic Multilingual Plane: a table by UTF-16 code unit
# gives each one's byte, and 256 to every other unit (a surrogate half included), so that a whole
# vocabulary's strings are converted by one numpy lookup.
_UNIT_TO_BYTE = np.full(1 << 16, 256, np.uint16)
_UNIT_TO_BYTE[[ord(c) for c in CHAR_TO_BYTE]] = list(CHAR_TO_BYTE.values())


def str_to_token(s: str, where: str) -> bytes:
    """GPT-2's printable characters back to bytes; a ValueError names `where` if one is not
    a byte character."""
    units = _UNIT_TO_BYTE[np.frombuffer(s.encode("utf-16-le", "surrogatepass"), np.uint16)]
    if len(units) != len(s) or (units > 255).any():
        bad = next(c for c in s if c not in CHAR_TO_BYTE)
        raise ValueError(f"{where}: {bad!r} is not a GPT-2 byte character")
    return units.astype(np.uint8).tobytes()


def strs_to_tokens(strs: list[str], where: str) -> list[bytes]:
    """str_to_token of each, translated as one str (a 200 000-token vocabulary's strings:
    ~0.05 s against ~0.6 s one by one); a ValueError names the first that is not one."""
    try:
        return split_at(str_to_token("".join(strs), where), offsets_of(strs))
    except ValueError:
        for s in strs:
            str_to_token(s, f"{where}: token {s!r}")
        raise


@contextmanager
def atomic_write(path: str, mode: str = "w") -> Iterator:
    """Writes path whole or not at all (atomic_writes, for one file)."""
    with atomic_writes([path], mode) as (f,):
        yield f


@contextmanager
def atomic_writes(paths: list[str], mode: str = "w") -> Iterator[tuple]:
    """Writes files whole or not at all: each to a temporary file in its directory; once the
    caller is done, all of them are flushed to disk, and only then renamed over their paths.
    If a rename fails (a file made immutable), the files already renamed get their old
    contents back, kept until then as hard links: a failure leaves the files as they were,
    not half old, half new. The files get the permissions the user's umask gives a new file
    (as open() would), not a temporary file's private 0600, and a file that existed keeps its
    own (a private file stays private); one that is read-only is refused, as open() refuses
    it. A symbolic link is written
    through, as open() would: its target is replaced, not the link. A path that exists and is
    no regular file (a device, a FIFO: renaming over it would replace the node itself) is
    refused, as is one ending in a separator."""
    targets = distinct_outputs(paths)
    temps: list[tuple[str, object]] = []  # (temporary path, its open file)
    try:
        for target in targets:
            temps.append(_create_temporary(target, mode))
        try:
            yield tuple(f for _, f in temps)
            for _, f in temps:
                f.flush()
                os.fsync(f.fileno())
                f.close()
        except OSError as e:
            # A write or flush says only "No space left on device": say what it was writing.
            if e.filename is None and e.errno in _OUT_OF_ROOM:
                raise OSError(e.errno, f"cannot write {', '.join(map(repr, paths))}: "
                                       f"{e.strerror}") from e
            raise
        with _interrupts_held():
            _rename_all([tmp for tmp, _ in temps], targets)
    except BaseException:
        for tmp, f in temps:
            with contextlib.suppress(OSError):  # its flush may fail again (a full disk)
                f.close()
            # (renamed already; or a directory that takes no unlink, append-only: the error
            # to give is the one that stopped the writing, and every other file still goes)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


# A file system with no room for an output (the errors a read does not give).
_OUT_OF_ROOM = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


def distinct_outputs(paths: list[str]) -> list[str]:
    """The files the output paths name (output_target), a ValueError if two are one file (the
    same path twice, or a symbolic link to another output): the second written would replace
    the first."""
    targets = [output_target(p) for p in paths]
    seen: dict[str, str] = {}
    for path, target in zip(paths, targets):
        real = os.path.realpath(target)
        if real in seen:
            raise ValueError(f"the outputs {seen[real]!r} and {path!r} are one file: writing "
                             "both would lose one")
        seen[real] = path
    return targets


def output_target(path: str) -> str:
    """The file an output path names (a symbolic link's target), checked before any work: what
    atomic_writes would refuse is refused here (see there)."""
    if not path:  # abspath would make it the working directory, written in its parent
        raise ValueError("the output path is empty")
    if path.endswith(os.sep) or (os.altsep and path.endswith(os.altsep)):
        raise ValueError(f"cannot write {path!r}: a file's path cannot end in a separator")
    if os.path.islink(path):
        try:  # what the link leads to, which realpath names wrongly for a loop or a pipe
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            mode = None  # a link to nothing yet: the file is made where it points
        except OSError as e:
            raise OSError(e.errno, f"cannot write {path!r}: {e.strerror}") from None
        if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ValueError(f"cannot write {path!r}: it leads to no regular file (a device, "
                             "FIFO or socket, which the output would replace); write to a file")
        path = os.path.realpath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {path!r}: it is a directory")
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError(f"cannot write {path!r}: it is not a regular file (a device, FIFO or "
                         "socket, which the output would replace); write to a file")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise PermissionError(f"cannot write {path!r}: it is read-only")
    directory = os.path.dirname(absolute(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot write {path!r}: no such directory {directory!r}")
    check_name_lengths(path, directory)
    return path


def absolute(path: str) -> str:
    """path made absolute as the system reads it: os.path.abspath takes "link/.." out as
    text, where the system goes up from the directory the link leads to (a save into
    "link/../tok" made its directory there, then looked for its files beside the link). An
    absolute path is taken as it is (the working directory may be gone)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def nearest_existing(path: str) -> str:
    """path made absolute (absolute), or the nearest path above it that exists."""
    existing = absolute(path)
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    return existing


def check_name_lengths(path: str, existing: str) -> None:
    """Refuses a path whose names below the directory `existing` are longer than its file
    system allows: found by the write, it was found after the work."""
    try:
        longest = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no limit known (or no pathconf)
        return
    rest = os.path.relpath(os.path.abspath(path), existing)
    for name in rest.split(os.sep):
        # In characters too: some file systems (NTFS, SMB) count UTF-16 units, not bytes,
        # and a name the rename refuses is refused late rather than a good one refused here.
        if longest > 0 and min(len(os.fsencode(name)), len(name)) > longest:
            raise OSError(errno.ENAMETOOLONG, f"cannot write {path!r}: the name "
                          f"{name[:20]!r}... is longer than the {longest} bytes its file "
                          "system allows")


def _beside(path: str, what: str) -> str:
    """A fresh name for a temporary file beside path. Only the start of path's name is kept:
    a name near the file system's limit (255 bytes) must leave room for the rest."""
    directory, name = os.path.split(absolute(path))
    return os.path.join(directory, f".{name[:32]}.{secrets.token_hex(6)}.{what}")


def _create_temporary(target: str, mode: str) -> tuple[str, object]:
    while True:
        tmp = _beside(target, "tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
            break
        except FileExistsError:
            continue
        except OSError as e:  # name the output, not the temporary file
            raise OSError(e.errno, f"cannot write {target!r} ({e.strerror} in "
                                   f"{os.path.dirname(tmp)!r})") from None
    try:  # an existing file's permissions, not the umask's (np.save's open() keeps them);
        # not set-user-ID and set-group-ID, which a write through open() clears
        os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode) & 0o777)
    except OSError:  # no file yet; or a file system without permissions (vfat, SMB): the
        pass  # umask's, as before
    return tmp, os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {}))


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Holds back Ctrl-C (and SIGTERM, where a Python handler takes it) for the renames, and
    raises it once they are done: a KeyboardInterrupt raised between two bytecodes of
    _rename_all (just after an os.replace, before it was noted; in its clean-up loops) left a
    target new while the others were put back, or hard links named .NAME.HEX.old behind.
    Python runs signal handlers in the main thread only, so nothing is raised in another."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler):
            held[sig] = handler
            signal.signal(sig, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
        for sig in caught[:1]:  # its own handler now: KeyboardInterrupt at the next bytecode
            signal.raise_signal(sig)


def _rename_all(temps: list[str], targets: list[str]) -> None:
    """Renames each temporary file over its target. When there are several, a failure puts
    back the targets already replaced: their old files from hard links made just before, and
    a target that did not exist is removed again."""
    several = len(targets) > 1
    replaced: list[tuple[str, str | None, bool]] = []  # (target, link to its old file, existed)
    try:
        for tmp, target in zip(temps, targets):
            existed = os.path.exists(target)
            old = _link_old(target) if several and existed else None
            try:
                os.replace(tmp, target)
            except OSError as e:
                if old:
                    with contextlib.suppress(OSError):  # (the error to give is the rename's)
                        os.unlink(old)
                raise OSError(e.errno, f"cannot write {target!r}: {e.strerror}") from None
            replaced.append((target, old, existed))
    except BaseException:
        for target, old, existed in reversed(replaced):
            with contextlib.suppress(OSError):
                if old:
                    os.replace(old, target)
                elif not existed:
                    os.unlink(target)
        raise
    finally:
        for _, old, _ in replaced:
            if old:
                with contextlib.suppress(OSError):
                    os.unlink(old)


def _link_old(target: str) -> str | None:
    """A hard link to target's file under a fresh name, or None where the file system has no
    hard links (that target then cannot be put back)."""
    old = _beside(target, "old")
    try:
        os.link(target, old)
    except OSError:
        return None
    return old


def check_regular_file(path: str, what: str) -> str:
    """path, if it is a regular file (a symlink to one is fine); a device, FIFO or directory
    raises ValueError naming it and what was expected (reading /dev/zero never ends)."""
    st = os.stat(path)  # FileNotFoundError names the path
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a regular file (expected {what})")
    return path


def save_gpt2(vocab: Vocab, merges: Merges, vocab_path: str, merges_path: str) -> None:
    """Writes GPT-2's vocab.json and merges.txt, together atomically (atomic_writes)."""
    merges = list(merges)  # read twice below
    spelled = _spellings(vocab, merges)
    with atomic_writes([vocab_path, merges_path]) as (vocab_f, merges_f):
        _write_vocab_json(vocab_f, vocab, spelled)
        _write_merges_txt(merges_f, merges, spelled)


def _spellings(vocab: Vocab, merges: Merges) -> dict[bytes, str]:
    """token_to_str of each token of the vocabulary and the merges, made once: the files
    write most tokens three or four times."""
    spelled = {t: token_to_str(t) for t in vocab.values()}
    for t in itertools.chain.from_iterable(merges):
        if t not in spelled:
            spelled[t] = token_to_str(t)
    return spelled


def _write_vocab_json(f, vocab: Vocab, spelled: Mapping[bytes, str]) -> None:
    f.write(json_indented({spelled[t]: i for i, t in sorted(vocab.items())}, 0))


def _write_merges_txt(f, merges: Merges, spelled: Mapping[bytes, str]) -> None:
    f.write("".join(["#version: 0.2\n"] + [f"{spelled[a]} {spelled[b]}\n" for a, b in merges]))


_JSON_PLAIN = {str, int, float, bool, type(None)}  # values json writes alike at any indent


def json_indented(value, indent: int, depth: int = 0) -> str:
    """json.dumps(value, ensure_ascii=False, indent=indent), the same text (dict keys are
    strs here), made faster. json makes its indented form with its pure-Python encoder, item
    by item; here a list or dict of plain values (a vocabulary, the merges) is one call of its
    C encoder, whose item separator carries the newline and indent."""
    if not isinstance(value, (dict, list, tuple)) or not value:
        return json.dumps(value, ensure_ascii=False)
    inner = "\n" + " " * (indent * (depth + 1))
    items = value.values() if isinstance(value, dict) else value
    if set(map(type, items)) <= _JSON_PLAIN:
        body = json.dumps(value, ensure_ascii=False, separators=("," + inner, ": "))[1:-1]
    elif isinstance(value, dict):
        body = ("," + inner).join(f"{json.dumps(k, ensure_ascii=False)}: "
                                  f"{json_indented(v, indent, depth + 1)}"
                                  for k, v in value.items())
    else:
        body = ("," + inner).join(json_indented(v, indent, depth + 1) for v in value)
    brackets = "{}" if isinstance(value, dict) else "[]"
    return brackets[0] + inner + body + "\n" + " " * (indent * depth) + brackets[1]


def _read_json(path: str):
    """A JSON file's document; a ValueError naming the file if it is not UTF-8 JSON (nested
    past the interpreter's depth too)."""
    with _named_decode_errors(path):
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
        except RecursionError:
            raise ValueError(f"{path}: JSON nested too deeply") from None
        except UnicodeDecodeError:  # (its offset counts in one block of the file)
            raise
        except ValueError as e:  # an int of more digits than the interpreter converts
            raise ValueError(f"{path}: {e}") from None


def _refuse_empty_token(raw_vocab: dict, path: str) -> None:
    """A ValueError naming the file if its vocabulary holds the empty string, a token of no
    bytes, which encoding never gives and no file of tiktoken's can hold (save refuses it)."""
    if "" in raw_vocab:
        raise ValueError(f"{path}: the token '' (id {raw_vocab['']!r}) has no bytes")


def _check_ids(pairs: Iterable[tuple[str, object]], path: str) -> None:
    """A ValueError naming the file unless every (token, id) has an id that is an int in
    [0, 2**31) used once."""
    seen = set()
    for s, i in pairs:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**31:
            raise ValueError(f"{path}: token {s!r} has id {i!r}, not an int in [0, 2**31)")
        if i in seen:
            raise ValueError(f"{path}: id {i} is used twice")
        seen.add(i)


def load_gpt2(vocab_path: str, merges_path: str) -> tuple[Vocab, MergeParts]:
    """Reads GPT-2 files; a malformed file raises ValueError naming the file and line."""
    vocab_path = check_regular_file(os.fspath(vocab_path), "a GPT-2 vocab.json")
    merges_path = check_regular_file(os.fspath(merges_path), "a GPT-2 merges.txt")
    raw = _read_json(vocab_path)
    if not isinstance(raw, dict):
        raise ValueError(f"{vocab_path}: expected a JSON object of token -> id")
    ids = list(raw.values())
    if not (set(map(type, ids)) <= {int} and min(ids, default=0) >= 0
            and max(ids, default=0) < 2**31 and len(set(ids)) == len(ids)):
        _check_ids(raw.items(), vocab_path)
    _refuse_empty_token(raw, vocab_path)
    vocab: Vocab = dict(zip(ids, strs_to_tokens(list(raw), vocab_path)))
    return vocab, _read_merges_txt(merges_path)


def _read_merges_txt(path: str) -> MergeParts:
    """merges.txt in blocks of about 4 MB, each read in bulk: the strings of one block at a
    time, never of the whole file, are alive at once."""
    blocks, lineno = [], 0
    with open(path, encoding="utf-8") as f, _named_decode_errors(path):
        while lines := f.readlines(1 << 22):
            lines = "".join(lines).split("\n")  # after the last line's newline: ""
            if lineno == 0 and lines[0].startswith("#version"):
                lines[0] = ""
            block = _well_formed_merges([line for line in lines if line])
            blocks.append(_merges_lines(lines, lineno, path) if block is None else block)
            lineno += len(lines) - 1
    return MergeParts.join(blocks)


class MergeNotInVocabulary(ValueError):
    """A merge that names or makes a token the vocabulary lacks; index: the merge's rank."""

    def __init__(self, index: int, message: str):
        super().__init__(f"merge {index} {message}")
        self.index = index


def merges_txt_line(path: str, index: int) -> int:
    """The line of merges.txt that holds merge `index`, counted as _read_merges_txt counts
    them (read again, on the error path only)."""
    k = -1
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line and not (lineno == 1 and line.startswith("#version")):
                k += 1
                if k == index:
                    return lineno
    raise ValueError(f"{path} changed while it was read")


@contextmanager
def _named_decode_errors(path: str) -> Iterator[None]:
    """A file that is not UTF-8 as a ValueError naming it and where (read again to find it)."""
    try:
        yield
    except UnicodeDecodeError as e:
        try:
            with open(path, "rb") as f:
                place = first_bad_utf8(f)
        except OSError:
            place = ""
        raise ValueError(f"{path}: not UTF-8{place} ({e.reason})") from None


def _merges_lines(lines: list[str], lineno: int, path: str) -> MergeParts:
    """Lines of merges.txt after line number lineno, read one at a time, to name what is
    wrong."""
    merges: Merges = []
    for lineno, line in enumerate(lines, lineno + 1):
        if not line:
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"{path}:{lineno}: expected two tokens separated by one space, "
                             f"got {line!r}")
        where = f"{path}:{lineno}"
        merges.append((str_to_token(parts[0], where), str_to_token(parts[1], where)))
    return MergeParts.of(merges)


# ---- Hugging Face tokenizer.json ----------------------------------------------------------

def hf_tokenizer_json(vocab: Vocab, merges: Merges, special_tokens: list[str],
                      pattern: str, ignore_merges: bool, only: set[bytes],
                      as_text: set[bytes], not_special: frozenset[str],
                      spelled: Mapping[bytes, str]) -> dict:
    """The tokenizer.json document: loads as is with tokenizers.Tokenizer.from_file. The
    model's vocabulary holds every token but only (the special tokens that are only that:
    only_special), each in GPT-2's byte characters but as_text (the other specials that no
    byte or merge makes): those as their text, as Hugging Face's trainer writes its specials,
    since tokenizers gives an added token the id its text has in the model's vocabulary. A
    ValueError if two tokens would be written alike (a special "é" and the byte 0xE9, which
    GPT-2's characters spell "é"): tokenizers would give both one id. not_special: added
    tokens written with "special": false (as loaded). spelled: each token's token_to_str
    (_spellings)."""
    specials = {s.encode("utf-8"): s for s in special_tokens}
    kept = [(specials[t] if t in as_text else spelled[t], i)
            for i, t in sorted(vocab.items()) if t not in only]
    model_vocab = dict(kept)
    if len(model_vocab) != len(kept):  # two tokens written alike: find them
        seen: dict[str, int] = {}
        for key, i in kept:
            _refuse_respelled(vocab, seen, key, i)
            seen[key] = i
    for i, t in vocab.items():
        if t in specials:
            _refuse_respelled(vocab, model_vocab, specials[t], i)
    # tokenizers numbers an added token that is not in the model's vocabulary by its count,
    # in the order listed: those left out of it first, which that count then gives their ids.
    added = [{"id": i, "content": specials[t], "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": specials[t] not in not_special}
             for i, t in sorted(vocab.items(), key=lambda it: (it[1] not in only, it[0]))
             if t in specials]
    family = pretokenizer(pattern).family
    gpt2 = family is not None and family.name == "gpt2"  # ByteLevel's own regex is GPT-2's
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": gpt2}
    if gpt2:
        pre_tokenizer = byte_level
    else:
        # A family's form that tokenizers reads as regex does: it takes a possessive {m,n}+
        # for a repetition of the group.
        split = family.hf_pattern if family is not None else resolve_pattern(pattern)
        pre_tokenizer = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": split}, "behavior": "Isolated",
             "invert": False}, byte_level]}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None, "pre_tokenizer": pre_tokenizer, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": model_vocab,
                  "merges": [f"{spelled[a]} {spelled[b]}" for a, b in merges]},
    }


def _refuse_respelled(vocab: Vocab, model_vocab: dict[str, int], key: str, i: int) -> None:
    """A ValueError if the token i, written as key, would be read as another token's id."""
    j = model_vocab.get(key, i)
    if j != i:
        a, b = sorted((i, j))
        raise ValueError(f"the tokens {vocab[a]!r} (id {a}) and {vocab[b]!r} (id {b}) are both "
                         f"written {key!r} in tokenizer.json (a special token is written as "
                         "its text, any other token in GPT-2's byte characters): tokenizers "
                         "would give both one id")


def _hf_pattern(pre: dict | None, path: str) -> str:
    """The pattern of a tokenizer.json's pre_tokenizer: ByteLevel with its own regex (GPT-2's),
    or a Split regex (isolated) before a ByteLevel that does not split. Anything else changes
    the pre-tokens in ways bpe_cffi does not follow, so it is refused rather than misread."""
    def byte_level(p: dict, use_regex: bool) -> bool:
        if p.get("type") != "ByteLevel":
            return False
        for flag in ("use_regex", "add_prefix_space"):  # ("no" is no false)
            if not isinstance(p.get(flag, True), bool):
                raise ValueError(f"{path}: pre_tokenizer ByteLevel {flag} is {p[flag]!r}, not "
                                 "true or false")
        if p.get("use_regex", True) != use_regex:
            return False
        if p.get("add_prefix_space", True):
            raise ValueError(f"{path}: pre_tokenizer ByteLevel with add_prefix_space adds a "
                             "space before the text, which bpe_cffi does not do")
        return True

    while pre and pre.get("type") == "Sequence" and len(pre.get("pretokenizers") or ()) == 1:
        pre = pre["pretokenizers"][0]  # a list of one does what the one does
    if pre and byte_level(pre, True):
        return GPT2_PATTERN
    steps = pre.get("pretokenizers") if pre and pre.get("type") == "Sequence" else None
    if steps and len(steps) == 2 and byte_level(steps[1], False):
        split = steps[0]
        if split.get("type") == "Split" and isinstance(split.get("pattern"), dict) \
                and isinstance(split["pattern"].get("Regex"), str):
            if split.get("behavior") != "Isolated" or split.get("invert", False):
                raise ValueError(f"{path}: pre_tokenizer Split with behavior "
                                 f"{split.get('behavior')!r} and invert "
                                 f"{split.get('invert')!r}: bpe_cffi takes each match as a "
                                 "pre-token (Isolated, not inverted)")
            return _family_read_alike(split["pattern"]["Regex"], path)
    raise ValueError(f"{path}: unsupported pre_tokenizer {_describe(pre)} (expected "
                     "ByteLevel, or a Split regex followed by ByteLevel without its regex)")


# What Oniguruma, the regex engine of tokenizers, reads otherwise than the regex module in a
# family's spellings: a possessive {m,n}+ (a repetition of the group there: \p{N}{1,3}+ takes
# "1234567" whole) and \s+$, whose $ ends every line there, so that \s+ gives back a line
# break to match before it (\s++$ gives nothing back, and reads alike in both).
_READ_OTHERWISE = re.compile(r"\{\d+(?:,\d*)?\}\+|(?<!\+)\+\$")


def _family_read_alike(split_regex: str, path: str) -> str:
    """A tokenizer.json's Split regex, refused if it spells a family's pattern in a form that
    tokenizers reads otherwise: bpe_cffi would take it for the family and split as the family
    does, where tokenizers splits otherwise (spec 3.2)."""
    if split_regex in PATTERNS:  # as a regex, only its own text; bpe_cffi would take the name
        raise ValueError(f"{path}: the Split regex {split_regex!r} is a name of bpe_cffi's "
                         "patterns, which would be read as that pattern; as a regex it matches "
                         "only its own text")
    family = family_of(split_regex)
    found = _READ_OTHERWISE.search(split_regex) if family is not None else None
    if found:
        raise ValueError(f"{path}: the Split regex is the {family.name} pattern with "
                         f"{found.group()!r}, which tokenizers (Oniguruma) reads otherwise than "
                         "the family (a possessive {m,n}+ as a repetition of the group, $ "
                         "after \\s+ as the end of any line), so its ids would differ from "
                         "bpe_cffi's; the family reads alike in both as "
                         + (repr(family.hf_pattern) if family.hf_pattern else
                            "ByteLevel's own regex"))
    return split_regex


def _check_hf_model(doc: dict, path: str) -> None:
    """A ValueError naming the setting of a tokenizer.json that changes ids in a way bpe_cffi
    does not follow (rather than ids that differ from tokenizers' without a word)."""
    model = doc["model"]
    refused = [("normalizer", doc.get("normalizer"),
                (None, {"type": "Sequence", "normalizers": []})),  # none, or none in a list
               ("model.dropout", model.get("dropout"), (None, 0, 0.0)),
               ("model.continuing_subword_prefix", model.get("continuing_subword_prefix"),
                (None, "")),
               ("model.end_of_word_suffix", model.get("end_of_word_suffix"), (None, "")),
               ("model.byte_fallback", model.get("byte_fallback"), (None, False))]
    for name, value, accepted in refused:
        if value not in accepted:
            raise ValueError(f"{path}: {name} is {value!r}; bpe_cffi supports only "
                             f"{' or '.join(map(repr, accepted))}")
    if not isinstance(model.get("ignore_merges", False), bool):
        raise ValueError(f"{path}: model.ignore_merges is {model['ignore_merges']!r}, not a bool")
    if not isinstance(doc.get("added_tokens", []), list):
        raise ValueError(f"{path}: added_tokens is {doc['added_tokens']!r}, not a list")
    for t in doc.get("added_tokens", []):
        for flag in ("lstrip", "rstrip", "single_word", "normalized", "special"):
            if not isinstance(t.get(flag, False), bool):  # ("no" is no false)
                raise ValueError(f"{path}: added token {t.get('content')!r} has {flag} "
                                 f"{t[flag]!r}, not true or false")
        for flag in ("lstrip", "rstrip", "single_word"):
            if t.get(flag):
                raise ValueError(f"{path}: added token {t.get('content')!r} has {flag} set; "
                                 "bpe_cffi matches added tokens as they are written")


def _check_hf_decoder(decoder, path: str) -> None:
    """A ValueError unless a tokenizer.json's decoder is ByteLevel (alone, or the one step of a
    Sequence): bpe_cffi decodes ids to the bytes of their tokens, as it does, and any other
    decoder would make tokenizers decode to other text (Strip drops a leading space, Metaspace
    turns U+2581 into spaces, ...). None is taken with a warning: tokenizers then joins the
    tokens, written in GPT-2's byte characters, with spaces, which no one wants."""
    while isinstance(decoder, dict) and decoder.get("type") == "Sequence" \
            and len(decoder.get("decoders") or ()) == 1:
        decoder = decoder["decoders"][0]
    if decoder is None:  # (stacklevel: Tokenizer.load's caller, past load, _collector_paused,
        # _load and _load_hf)
        warnings.warn(f"{path}: it has no decoder, so tokenizers would decode ids to their "
                      "tokens in GPT-2's byte characters, joined by spaces; bpe_cffi decodes "
                      "them to their bytes, as the ByteLevel decoder does", UserWarning,
                      stacklevel=7)
    elif not isinstance(decoder, dict) or decoder.get("type") != "ByteLevel":
        raise ValueError(f"{path}: decoder {_describe(decoder)} would decode ids to other text "
                         "than bpe_cffi, which decodes them to their bytes (the ByteLevel "
                         "decoder)")


def _describe(step) -> str:
    """A pre-tokenizer's or decoder's kind, for a message: its type, or its steps' types."""
    if not isinstance(step, dict):
        return repr(step)
    inner = step.get("pretokenizers", step.get("decoders"))
    if step.get("type") == "Sequence" and isinstance(inner, list):
        return f"Sequence[{', '.join(_describe(x) for x in inner)}]"
    if step.get("type") == "Split" and isinstance(step.get("pattern"), dict):
        return f"Split({', '.join(step['pattern'])})"  # Regex or String
    if step.get("type") == "ByteLevel":
        return f"ByteLevel(use_regex={step.get('use_regex', True)})"
    return str(step.get("type"))


def _refuse_unknown_bytes(unk_token, vocab: Vocab, path: str) -> None:
    """With an unk_token, tokenizers encodes a byte that has no token as that token, where
    bpe_cffi refuses text that holds it (docs/spec.md 4): a file with both is refused. Without
    one, both refuse nothing here (tokenizers drops such a byte; bpe_cffi refuses the text)."""
    if unk_token is None:
        return
    tokens = set(vocab.values())
    missing = [b for b in range(256) if bytes([b]) not in tokens]
    if missing:
        raise ValueError(f"{path}: model.unk_token is {unk_token!r} and no token is the byte(s) "
                         f"{', '.join(f'0x{b:02X}' for b in missing[:8])}"
                         f"{', ...' if len(missing) > 8 else ''}: tokenizers encodes such a byte "
                         "as the unknown token, bpe_cffi refuses text that holds it")


def load_hf(path) -> tuple[Vocab, MergeParts, list[str], str, bool, frozenset[str]]:
    """Reads a tokenizer.json: (vocab, merges, special tokens, pattern, ignore_merges, the
    added tokens marked "special": false). Every added token, special or not, is a special
    token of bpe_cffi's: tokenizers takes them all out of the text before its pre-tokenizer.
    A setting that changes ids in a way bpe_cffi does not follow is a ValueError (see
    _check_hf_model, _hf_pattern); the post-processor (a BOS token that tokenizers adds by
    default, say) is left to the caller."""
    path = check_regular_file(os.fspath(path), "a Hugging Face tokenizer.json")
    doc = _read_json(path)
    try:
        model = doc["model"]
        if not isinstance(model, dict):
            raise ValueError(f"{path}: model is {model!r}, not a BPE model (an object)")
        if model.get("type", "BPE") != "BPE":
            raise ValueError(f"{path}: model type {model.get('type')!r} is not BPE")
        _check_hf_model(doc, path)
        _check_hf_decoder(doc.get("decoder"), path)
        ignore_merges = model.get("ignore_merges", False)  # a bool: checked just above
        added = doc.get("added_tokens") or []
        model_vocab = model["vocab"]
        _check_ids(model_vocab.items(), path)
        _refuse_empty_token(model_vocab, path)
        _check_ids(((t["content"], t["id"]) for t in added), path)
        merges = _hf_merges(model["merges"], path)
        # Hugging Face's trainer puts its specials in the model's vocabulary as their text, not
        # in GPT-2's byte characters: an added token's text there, at its id, is that token.
        as_text = {t["content"] for t in added if isinstance(t["content"], str)
                   and model_vocab.get(t["content"]) == t["id"]}
        try:  # most files: every key in GPT-2's characters (specials in ASCII read alike)
            vocab: Vocab = dict(zip(model_vocab.values(), strs_to_tokens(list(model_vocab),
                                                                         path)))
        except ValueError:
            spelled = [k for k in model_vocab if k not in as_text]
            vocab = dict(zip((model_vocab[k] for k in spelled), strs_to_tokens(spelled, path)))
        for content, other in _respelled(as_text, merges, ignore_merges).items():
            raise ValueError(f"{path}: added token {content!r} is also the model's token "
                             f"{other!r}, spelled so in GPT-2's byte characters, with the same "
                             "id: one id cannot be both")
        for content in as_text:
            vocab[model_vocab[content]] = content.encode("utf-8")
        _refuse_unknown_bytes(model.get("unk_token"), vocab, path)
        specials, listed = [], set()
        top, n_model = None, len(model_vocab)  # the highest id of the added tokens so far
        for t in added:
            content = t["content"]
            if not isinstance(content, str) or not content:
                raise ValueError(f"{path}: added token {t['id']} has content {content!r}, "
                                 "not a non-empty str")
            if content in listed and content not in model_vocab:  # (a model's key: its id)
                raise ValueError(f"{path}: added token {content!r} is listed twice: tokenizers "
                                 "keeps the first and skips the other, numbering the added "
                                 "tokens after it without it")
            listed.add(content)
            token = content.encode("utf-8")  # a lone surrogate: UnicodeEncodeError
            i = model_vocab.get(content, t["id"])  # tokenizers gives it the model's id
            if i != t["id"] and vocab[i] != token:
                raise ValueError(f"{path}: added token {content!r} has id {t['id']}, but "
                                 f"{content!r} is also the model's key for the token "
                                 f"{vocab[i]!r} (id {i}), and tokenizers would give the added "
                                 "token that id")
            if vocab.get(i, token) != token:  # the model's own entry may repeat it
                raise ValueError(f"{path}: added token {content!r} has id {i}, the id of the "
                                 f"token {vocab[i]!r}")
            if content not in model_vocab:  # a new id: tokenizers numbers it itself, even
                # where the file gives it the id of a model token of the same bytes
                want = top + 1 if top is not None and (top >= n_model or n_model == 0) \
                    else n_model
                if i != want:
                    raise ValueError(f"{path}: added token {content!r} has id {i}, but "
                                     f"tokenizers numbers it {want}: the next id after the "
                                     "model's vocabulary and the added tokens listed before it")
            top = i if top is None else max(top, i)
            spelled = token_to_str(token)  # its bytes, as the model's vocabulary writes them
            twin = model_vocab.get(spelled, i)
            if twin != i and vocab.get(twin) == token:
                raise ValueError(f"{path}: added token {content!r} (id {i}) has the bytes of "
                                 f"the model's token {spelled!r} (id {twin}): tokenizers "
                                 f"would give the text {content!r} id {i}, bpe_cffi id {twin} "
                                 "(a special token whose bytes are a token takes its id)")
            vocab[i] = token
            specials.append(content)
        _refuse_overlapping_kinds(added, path)
        pattern = _hf_pattern(doc.get("pre_tokenizer"), path)
    except (KeyError, TypeError, AttributeError, UnicodeError) as e:
        raise ValueError(f"{path}: not a BPE tokenizer.json ({type(e).__name__}: {e})") from None
    not_special = frozenset(t["content"] for t in added if t.get("special", True) is False)
    return vocab, merges, specials, pattern, ignore_merges, not_special


def _overlap(a: str, b: str) -> bool:
    """Whether a and b can overlap in a text without being the same occurrence: one inside the
    other, or an end of one the start of the other. (Pair by pair, for the rare token listed
    as both kinds; _overlapping_pair finds the others.)"""
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


def _overlapping_pair(tokens: list[str], others: list[str]) -> tuple[str, str] | None:
    """A pair (a, b), a from tokens and b from others (disjoint lists), that can overlap as
    _overlap says, or None: the first a of tokens that holds a token of others or whose end
    starts one. Each a is read once through an Aho-Corasick automaton of others, so the cost
    grows with the tokens' total length (a test of every pair took 39 s for 2 000 tokens of
    100 characters, and the regex module's list of strings, tried one by one where they share
    a start, 6.6 s for 20 000 short ones)."""
    # The trie of others, built a character of every token at a time, so that a node's number
    # is above those of all shorter strings' nodes. Node 0 is the empty string; the node of
    # its string followed by character c is step[node * _CHARS + c]. through[node]: the first
    # of others that starts with its string; ends[node]: one of others that is a suffix of it.
    step: dict[int, int] = {}
    parent, char = array.array("q", [0]), array.array("q", [0])
    through: list[str | None] = [None]
    ends: list[str | None] = [None]
    at = [0] * len(others)  # each token's node so far
    growing = list(range(len(others)))
    for i in itertools.count():
        growing = [j for j in growing if len(others[j]) > i]
        if not growing:
            break
        for j in growing:
            key = at[j] * _CHARS + ord(others[j][i])
            node = step.get(key)
            if node is None:
                node = step[key] = len(parent)
                parent.append(at[j])
                char.append(key % _CHARS)
                through.append(others[j])
                ends.append(None)
            at[j] = node
    for j, node in enumerate(at):
        ends[node] = others[j]
    # link[node]: the node of the longest proper suffix of its string that starts a token,
    # found for shorter strings first.
    link = array.array("q", bytes(8 * len(parent)))
    for node in range(1, len(parent)):
        up, c = parent[node], char[node]
        if up:
            back = link[up]
            while back and back * _CHARS + c not in step:
                back = link[back]
            link[node] = step.get(back * _CHARS + c, 0)
        if ends[node] is None:
            ends[node] = ends[link[node]]
    for a in tokens:
        node = 0
        for c in map(ord, a):
            while node and node * _CHARS + c not in step:
                node = link[node]
            node = step.get(node * _CHARS + c, 0)
            if ends[node] is not None:
                return a, ends[node]  # a token of others inside a
        if node:  # a's end starts a token of others, longer (or it would have ended here)
            return a, through[node]
    return None


_CHARS = 0x110000  # code points: a trie step's key is node * _CHARS + the character's


def _refuse_overlapping_kinds(added: list, path: str) -> None:
    """tokenizers takes the added tokens that are not `normalized` out of the text first, then
    the normalized ones from what is left; bpe_cffi takes all in one pass, leftmost and longest
    first. The two agree unless a token of one kind can overlap one of the other: refused."""
    kinds: dict[bool, set[str]] = {True: set(), False: set()}
    for t in added:
        kinds[bool(t.get("normalized", not t.get("special", False)))].add(t["content"])
    # Sorted, so that the same pair is named from run to run.
    both = kinds[False] & kinds[True]  # a model's key listed twice, once of each kind
    lone, grouped = sorted(kinds[False] - both), sorted(kinds[True] - both)
    everyone = sorted(kinds[False] | kinds[True])
    pair = next(((a, b) for a in sorted(both) for b in everyone if a != b and _overlap(a, b)),
                None)
    if pair is None and lone and grouped:
        pair = _overlapping_pair(lone, grouped)
        if pair is None:
            swapped = _overlapping_pair(grouped, lone)
            pair = swapped and swapped[::-1]
    if pair is not None:
        def kind(token: str) -> str:
            return "both kinds" if token in both else \
                "normalized" if token in kinds[True] else "not normalized"
        a, b = pair
        raise ValueError(f"{path}: added tokens {a!r} ({kind(a)}) and {b!r} ({kind(b)}) can "
                         "overlap: tokenizers matches the tokens that are not normalized first, "
                         "bpe_cffi all in one pass, so their ids could differ")


def _well_formed_merges(raw: list) -> MergeParts | None:
    """Merges written as "a b" strings or [a, b] lists of GPT-2 byte strings, at C speed (a
    200 000-merge file: ~0.05 s against ~0.5 s merge by merge); None if one is not two
    non-empty strings of byte characters (the caller then finds it, to name it)."""
    types = set(map(type, raw))
    if types <= {str}:  # one space each, then the halves split at it
        if set(map(str.count, raw, itertools.repeat(" "))) - {1}:
            return None
        flat = " ".join(raw).split(" ")
    elif types <= {list} and set(map(len, raw)) <= {2}:
        flat = list(itertools.chain.from_iterable(raw))
        if set(map(type, flat)) - {str}:
            return None
    else:
        return None
    if "" in flat:
        return None
    try:
        return MergeParts(str_to_token("".join(flat), ""), offsets_of(flat))
    except ValueError:
        return None


def _hf_merges(raw: list, path: str) -> MergeParts:
    """A tokenizer.json's merges, "a b" strings or [a, b] lists."""
    if not isinstance(raw, list):
        raise ValueError(f"{path}: model.merges is a {type(raw).__name__}, not a list")
    parts = _well_formed_merges(raw)
    if parts is not None:
        return parts
    merges: Merges = []  # something is wrong: find it, one merge at a time
    for k, m in enumerate(raw):
        where = f"{path}: merge {k}"
        pair = m.split(" ") if isinstance(m, str) else m
        if not isinstance(pair, list) or len(pair) != 2 or \
                not all(isinstance(p, str) for p in pair):
            raise ValueError(f"{where}: expected two tokens (\"a b\" or [\"a\", \"b\"]), "
                             f"got {m!r}")
        merges.append((str_to_token(pair[0], where), str_to_token(pair[1], where)))
    return MergeParts.of(merges)


# ---- tiktoken ------------------------------------------------------------------------------

def only_special(token_to_id: Mapping[bytes, int], special_tokens: list[str],
                 ordinary: set[bytes]) -> set[bytes]:
    """The bytes of the special tokens that are only that (specials.special_only_ids), in a
    vocabulary holding each byte string once and every special; ordinary: the specials'
    bytes that are a byte or a merge's part or result."""
    id_to_special = {token_to_id[s.encode("utf-8")]: s.encode("utf-8") for s in special_tokens}
    only = special_only_ids(token_to_id.values(), list(id_to_special),
                            lambda i: id_to_special[i] in ordinary)
    return {id_to_special[i] for i in only}


def _in_merges(merges: Merges, tokens: set[bytes]) -> set[bytes]:
    """Those of tokens that a merge names or makes (200 000 merges: ~60 ms)."""
    if not tokens or not merges:
        return set()
    lefts = list(map(operator.itemgetter(0), merges))
    rights = list(map(operator.itemgetter(1), merges))
    if len(tokens) <= 8:  # a few: looked for at C speed, no set of every part made
        found = {t for t in tokens if t in lefts or t in rights}
    else:
        found = tokens & (set(lefts) | set(rights))
    if tokens - found:
        found |= (tokens - found) & set(map(bytes.__add__, lefts, rights))
    return found


def _respelled(texts: Iterable[str], merges, ignore_merges: bool = False) -> dict[str, bytes]:
    """Those of texts that spell another token in GPT-2's byte characters ("Ġ" spells the
    space): {text: the bytes it spells} where these are a byte or a merge's part or result
    other than the text's own UTF-8. merges: a list of pairs, or MergeParts (made pairs only
    if a text reads as GPT-2's characters otherwise than as itself, which few do).
    ignore_merges: tokenizers then looks a whole pre-token up among the model's keys, so a
    key reads as the bytes it spells whether or not a merge makes them: every such text."""
    spelled = {}
    for text in texts:
        try:
            b = str_to_token(text, "")
        except ValueError:
            continue  # not GPT-2's characters: only the text itself
        if b != text.encode("utf-8"):
            spelled[text] = b
    if ignore_merges:
        return spelled
    longer = {b for b in spelled.values() if len(b) > 1}  # a token only if a merge has it
    no_token = longer - _in_merges(merges.pairs() if isinstance(merges, MergeParts) else merges,
                                  longer) if longer else set()
    return {text: b for text, b in spelled.items() if b not in no_token}


def _write_tiktoken(f, vocab: Vocab, left_out: set[bytes]) -> None:
    """tiktoken's rank file (base64 token, rank), without the tokens left_out (the special
    tokens that are only that: tiktoken takes them apart)."""
    f.write("".join([f"{binascii.b2a_base64(t, newline=False).decode('ascii')} {i}\n"
                     for i, t in sorted(vocab.items()) if t not in left_out]))


def load_tiktoken(path) -> Vocab:
    """Reads tiktoken's rank file: {rank: token bytes}; a bad line raises ValueError naming
    the file and line."""
    path = check_regular_file(os.fspath(path), "a tiktoken rank file")
    vocab: Vocab = {}
    line_of: dict[bytes, int] = {}  # each token's line: a token ranked twice is an error
    with open(path, "rb") as f:
        data = f.read()
    try:  # decoded whole: a decoder reading in chunks places a bad byte within its chunk
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        bom = " (a byte-order mark)" if e.start == 0 and data.startswith(codecs.BOM_UTF8) else ""
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{path}:{line}: not ASCII at byte offset {e.start}{bom}") from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # as open() reads
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
        except (ValueError, binascii.Error):
            raise ValueError(f"{path}:{lineno}: expected 'base64 rank', got {line.strip()!r}") \
                from None
        if not 0 <= rank < 2**31:
            raise ValueError(f"{path}:{lineno}: rank {rank} is not in [0, 2**31)")
        if rank in vocab:
            raise ValueError(f"{path}:{lineno}: rank {rank} is given twice")
        if token in line_of:
            raise ValueError(f"{path}:{lineno}: token {token!r} is ranked twice (first on "
                             f"line {line_of[token]})")
        vocab[rank] = token
        line_of[token] = lineno
    return vocab


# ---- all formats at once --------------------------------------------------------------------

FILES = ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer.tiktoken")


def tokenizer_files(directory: str) -> list[str]:
    """The paths of the files save writes into directory (FILES)."""
    return [os.path.join(directory, name) for name in FILES]


def tokenizer_file_kind(path: str) -> str | None:
    """What Tokenizer.load reads a single file as, by its name: "json" (a tokenizer.json; not a
    GPT-2 vocab.json, which needs its merges.txt), "tiktoken" (a rank file), or None."""
    name = os.path.basename(path)
    if name.endswith(".json") and name != "vocab.json":
        return "json"
    return "tiktoken" if name.endswith(".tiktoken") else None


def tokenizer_paths(path: str) -> list[str]:
    """The files a tokenizer is read from: path itself if it is a file, else those save
    writes into the directory."""
    return [path] if os.path.isfile(path) else tokenizer_files(path)


def check_vocab(vocab) -> None:
    """A TypeError unless vocab is a dict (a mapping: Tokenizer.id_to_token) of ids (ints) to
    bytes, a ValueError for an id outside [0, 2**31)."""
    if not isinstance(vocab, Mapping):
        raise TypeError(f"vocab must be a dict of int -> bytes, not {type(vocab).__name__}")
    for i, b in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"vocab ids must be ints in [0, 2**31), got {i!r}")
        if not 0 <= i < 2**31:
            raise ValueError(f"vocab ids must be ints in [0, 2**31), got {i!r}")
        if not isinstance(b, bytes):
            raise TypeError(f"vocab values must be bytes, got {type(b).__name__} for id {i}")


def check_specials_saveable(special_tokens: Iterable[str]) -> None:
    """Refuses a special token that save would refuse with any vocabulary: one character
    that GPT-2's byte characters use for a byte other than its own UTF-8 (such as "é", the
    byte 0xE9). tokenizer.json writes a special token as its text and that byte token as the
    same character, so tokenizers would give both one id. bpe-cffi train checks this before
    training; a special that spells a merge token is found by the save alone. Nor one byte
    that GPT-2's characters write otherwise (such as "\n", written "Ċ"): see
    _refuse_respelled_ordinary."""
    for s in unique_specials(special_tokens):
        byte = CHAR_TO_BYTE.get(s)
        if byte is not None and s.encode("utf-8") != bytes([byte]):
            raise ValueError(f"the special token {s!r} cannot be saved: tokenizer.json writes "
                             f"a special token as its text, and {s!r} is how it writes the "
                             f"byte {byte:#04x}, a token of every vocabulary (tokenizers would "
                             "give both one id)")
        if len(s.encode("utf-8")) == 1:
            _refuse_respelled_ordinary({s.encode("utf-8")})


def _refuse_respelled_ordinary(ordinary: set[bytes]) -> None:
    """Refuses a special token that is also an ordinary token (a byte, a merge's part or
    result) whose text GPT-2's byte characters write otherwise (such as "\n", the token "Ċ"):
    tokenizer.json lists the special as an added token with its text, which is then no key of
    the model's vocabulary, and tokenizers gives such an added token an id of its own after
    the model's, not the token's id that bpe_cffi gives it."""
    for t in sorted(ordinary):
        if token_to_str(t) != t.decode("utf-8"):
            raise ValueError(f"the special token {t.decode('utf-8')!r} cannot be saved: its "
                             "bytes are an ordinary token, which tokenizer.json writes "
                             f"{token_to_str(t)!r}, and tokenizers would give the special "
                             "token an id of its own")


def save(vocab: Vocab, merges: Merges, out_dir,
         special_tokens: Iterable[str] | Mapping[str, int] = (),
         pattern: str = GPT2_PATTERN, *, ignore_merges: bool = False,
         not_special: Iterable[str] = ()) -> list[str]:
    """Writes the four formats into out_dir (created if needed); returns their paths. All is
    checked before a file is written: vocab, merges (pairs of bytes whose tokens, and the
    token each makes, are in vocab), special_tokens (a list of str, or {str: id} as tiktoken
    gives them: each at its id, as Tokenizer places them) and the pattern. A listed special
    token whose bytes are no token of vocab gets the next id, as Tokenizer gives it;
    a token listed twice is written once, with its lowest id. The four files are written
    whole, then put in place together: an existing file is replaced only once all four
    successors are complete. ignore_merges: written into tokenizer.json (see Tokenizer).
    not_special: special tokens that tokenizer.json lists as added tokens with "special":
    false, as a tokenizer.json it was loaded from had them (Hugging Face's decode with
    skip_special_tokens keeps those); they encode as every special token does."""
    specials = unique_specials(special_tokens)  # one str is refused: its characters are no tokens
    if not isinstance(ignore_merges, bool):  # as Tokenizer checks it
        raise TypeError(f"ignore_merges must be a bool, not {type(ignore_merges).__name__}")
    check_vocab(vocab)
    merges = list(merges)
    MergeParts.of(merges)  # each a pair of bytes
    tokens = set(vocab.values())
    # (at C speed first; the loop only finds the merge to name)
    if not (tokens.issuperset(itertools.chain.from_iterable(merges))
            and tokens.issuperset(itertools.starmap(operator.add, merges))):
        for r, (a, b) in enumerate(merges):
            for what, token in (("names", a), ("names", b), ("makes", a + b)):
                if token not in tokens:
                    raise ValueError(f"merge {r} {what} the token {token!r}, which is not in "
                                     "the vocabulary")
    empty = sorted(i for i, t in vocab.items() if not t)
    if empty:
        raise ValueError(f"token {empty[0]} of the vocabulary has no bytes: no tokenizer file "
                         "can hold it")
    vocab, lowest = dict(vocab), {}
    for i in sorted(vocab):
        lowest.setdefault(vocab[i], i)
    if isinstance(special_tokens, Mapping):  # (read as a list of its keys, the ids were lost)
        place_specials(special_tokens, vocab, lowest)
    add_special_ids(specials, vocab, lowest)  # the ids Tokenizer gives them
    # A byte string listed twice is written once, with its lowest id, the one encoding gives
    # it (docs/spec.md 2.4): every format maps a token's bytes to one id.
    vocab = {i: t for t, i in lowest.items()}
    special_bytes = {s.encode("utf-8") for s in specials}
    ordinary = {t for t in special_bytes if len(t) == 1} | _in_merges(merges, special_bytes)
    only = only_special(lowest, specials, ordinary)
    as_text = special_bytes - only - ordinary  # written as their text in tokenizer.json
    _refuse_respelled_ordinary(ordinary)
    for text, token in _respelled((t.decode("utf-8") for t in as_text), merges,
                                  ignore_merges).items():
        raise ValueError(f"the special token {text!r} would be written in tokenizer.json as "
                         f"its text, which spells the token {token!r} in GPT-2's byte "
                         "characters: a loader could not tell the two apart")
    not_special = frozenset(unique_specials(not_special))
    if not not_special <= set(specials):
        raise ValueError(f"not_special names {sorted(not_special - set(specials))!r}, which "
                         "are not among the special tokens")
    spelled = _spellings(vocab, merges)
    document = hf_tokenizer_json(vocab, merges, specials, pattern, ignore_merges, only,
                                 as_text, not_special, spelled)
    out_dir = os.fsdecode(os.fspath(out_dir))  # a bytes path too
    if not out_dir:
        raise ValueError("the output directory is empty")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise FileExistsError(f"cannot save into {out_dir!r}: it is a file, not a directory")
    if os.path.islink(out_dir) and not os.path.exists(out_dir):  # makedirs: "File exists"
        raise FileNotFoundError(f"cannot save into {out_dir!r}: it is a symbolic link to "
                                "nothing")
    # (found by makedirs, a name too long had left the directories before it made)
    check_name_lengths(out_dir, nearest_existing(out_dir))
    os.makedirs(out_dir, exist_ok=True)
    paths = tokenizer_files(out_dir)
    # All four together: a failure (a full disk) leaves the directory as it was, not half
    # old, half new.
    with atomic_writes(paths) as (vocab_f, merges_f, json_f, ranks_f):
        _write_vocab_json(vocab_f, vocab, spelled)
        _write_merges_txt(merges_f, merges, spelled)
        json_f.write(json_indented(document, 1))
        _write_tiktoken(ranks_f, vocab, only)
    return paths


# ---- word counts ----------------------------------------------------------------------------

def save_counts(counts, path) -> None:
    """Writes word counts ({bytes: count}, or (blob, offsets, counts) arrays) as a compact .npz,
    atomically, so that counting and merging can run at different times."""
    import numpy as np
    from .counter import counts_to_arrays
    if isinstance(counts, Mapping):
        blob, offsets, values = counts_to_arrays(counts)
    else:  # checked as load_counts checks them: a file it would refuse is not written
        try:
            blob, offsets, values = counts
            blob = bytes(memoryview(blob))  # bytes, or a uint8 array
            offsets, values = (np.asarray(a) if len(a) else np.zeros(0, np.int64)
                               for a in (offsets, values))  # [] is no float array here
        except (TypeError, ValueError):
            raise TypeError("counts must be a mapping of bytes to int, or count_words_arrays' "
                            f"(bytes, offsets, counts), not {type(counts).__name__}") from None
        problem = _count_arrays_problem(blob, offsets, values)
        if problem or _listed_twice(blob, offsets, values):
            raise ValueError(f"counts: {problem or 'a word is listed twice'}")
    with atomic_write(os.fspath(path), "wb") as f:
        np.savez(f, words=np.frombuffer(blob, np.uint8), offsets=offsets, counts=values,
                 format=np.array(["bpe_cffi word counts 1"]))


def load_counts(path) -> dict[bytes, int]:
    """Reads a file written by save_counts."""
    import numpy as np
    path = check_regular_file(os.fspath(path), "a word-count .npz written by save_counts")
    with open(path, "rb") as f:  # np.load reads a .npy or a pickle too, which are no .npz
        if f.read(4) != b"PK\x03\x04":
            raise ValueError(f"{path}: not a bpe_cffi word-count file (not an .npz archive)")
    try:
        with np.load(path, allow_pickle=False) as z:
            if "bpe_cffi word counts 1" not in z["format"].tolist():
                raise ValueError("unknown format")
            blob, offsets, values = z["words"].tobytes(), z["offsets"], z["counts"]
    # (zipfile raises EOFError for a header cut short, NotImplementedError for an unknown
    # compression method and zlib.error for a damaged stream)
    except (KeyError, ValueError, OSError, zipfile.BadZipFile, EOFError, NotImplementedError,
            zlib.error) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{path}: not a bpe_cffi word-count file "
                         f"({str(e) or type(e).__name__})") from None
    problem = _count_arrays_problem(blob, offsets, values)
    from .counter import arrays_to_counts
    counts = {} if problem else arrays_to_counts((blob, offsets, values))
    if problem or len(counts) != len(values):  # save_counts writes each word once
        raise ValueError(f"{path}: inconsistent word-count file "
                         f"({problem or 'a word is listed twice'})")
    return counts


def _count_arrays_problem(blob: bytes, offsets, values) -> str | None:
    """What is wrong with word-count arrays (words blob[offsets[i]:offsets[i + 1]], counted
    values[i] >= 0 times, in 64 bits), or None; a word listed twice is told apart."""
    if (offsets.ndim != 1 or values.ndim != 1 or offsets.dtype.kind not in "iu"
            or values.dtype.kind not in "iu" or len(offsets) != len(values) + 1):
        return "offsets and counts must be 1-D int arrays, one offset more than counts"
    if offsets[0] != 0 or offsets[-1] != len(blob) or (offsets[1:] < offsets[:-1]).any():
        return "offsets must rise from 0 to the words' length"
    if (values < 0).any() or (len(values) and int(values.max()) >= 2**63):
        return "counts must be from 0 to 2**63 - 1"  # (int64 in C)
    return None


def _listed_twice(blob: bytes, offsets, values) -> bool:
    """Whether consistent word-count arrays list a word twice (told by a C counter, without
    the words as Python objects)."""
    import numpy as np
    from .counter import WordCounter
    counter = WordCounter()
    counter.add(blob, np.ascontiguousarray(offsets, np.int64),
                np.ascontiguousarray(values, np.int64))
    n = len(counter)
    counter.release()
    return n != len(values)
