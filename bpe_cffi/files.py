"""Tokenizer files (SPEC 3): GPT-2's vocab.json + merges.txt, written atomically.

GPT-2 shows each byte as a printable character (its bytes_to_unicode table), so any byte
string survives JSON and a space-separated merges file.
"""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from typing import Iterator

Vocab = dict[int, bytes]
Merges = list[tuple[bytes, bytes]]


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


def token_to_str(token: bytes) -> str:
    return "".join(BYTE_TO_CHAR[b] for b in token)


def str_to_token(s: str, where: str) -> bytes:
    try:
        return bytes(CHAR_TO_BYTE[c] for c in s)
    except KeyError as e:
        raise ValueError(f"{where}: {e.args[0]!r} is not a GPT-2 byte character") from None


@contextmanager
def atomic_write(path: str, mode: str = "w") -> Iterator:
    """Writes path whole or not at all: a temporary file in the same directory, then rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def save_gpt2(vocab: Vocab, merges: Merges, vocab_path: str, merges_path: str) -> None:
    with atomic_write(vocab_path) as f:
        json.dump({token_to_str(t): i for i, t in sorted(vocab.items())}, f, ensure_ascii=False,
                  indent=0)
    with atomic_write(merges_path) as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{token_to_str(a)} {token_to_str(b)}\n")


def load_gpt2(vocab_path: str, merges_path: str) -> tuple[Vocab, Merges]:
    """Reads GPT-2 files; a malformed file raises ValueError naming the file and line."""
    vocab_path, merges_path = os.fspath(vocab_path), os.fspath(merges_path)
    with open(vocab_path, encoding="utf-8") as f:
        try:
            raw = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{vocab_path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{vocab_path}: expected a JSON object of token -> id")
    vocab: Vocab = {}
    for s, i in raw.items():
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise ValueError(f"{vocab_path}: token {s!r} has id {i!r}, not an int >= 0")
        if i in vocab:
            raise ValueError(f"{vocab_path}: id {i} is used twice")
        vocab[i] = str_to_token(s, vocab_path)
    merges: Merges = []
    with open(merges_path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if (lineno == 1 and line.startswith("#version")) or not line:
                continue
            parts = line.split(" ")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise ValueError(f"{merges_path}:{lineno}: expected two tokens separated by "
                                 f"one space, got {line!r}")
            where = f"{merges_path}:{lineno}"
            merges.append((str_to_token(parts[0], where), str_to_token(parts[1], where)))
    return vocab, merges
