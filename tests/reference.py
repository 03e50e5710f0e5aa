"""Small, obviously-correct pure-Python references that the fast code is tested against.

Slow by design: every step is the spec's sentence (docs/spec.md) written out, nothing incremental.
"""
from __future__ import annotations

from collections import Counter

import regex

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def split_specials(text: str, specials) -> list[tuple[str, bool]]:
    """spec 1.2 / 2.1: cut at special tokens, longest first, leftmost first."""
    if not specials:
        return [(text, False)] if text else []
    out, i = [], 0
    start = 0
    ordered = sorted(set(specials), key=len, reverse=True)
    while i < len(text):
        hit = next((s for s in ordered if text.startswith(s, i)), None)
        if hit is None:
            i += 1
            continue
        if i > start:
            out.append((text[start:i], False))
        out.append((hit, True))
        i += len(hit)
        start = i
    if start < len(text):
        out.append((text[start:], False))
    return out


def pretokenize(text: str, specials=(), pattern: str = GPT2_PATTERN) -> list[bytes]:
    pat = regex.compile(pattern)
    out = []
    for piece, is_special in split_specials(text, specials):
        if not is_special:
            out.extend(m.group().encode("utf-8") for m in pat.finditer(piece) if m.group())
    return out


def word_counts(text: str, specials=(), pattern: str = GPT2_PATTERN) -> dict[bytes, int]:
    return dict(Counter(pretokenize(text, specials, pattern)))


def merge_word(tokens: list[bytes], pair: tuple[bytes, bytes]) -> list[bytes]:
    """spec 1.6: replace occurrences of the pair left to right, without overlap."""
    out, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == pair:
            out.append(tokens[i] + tokens[i + 1])
            i += 2
        else:
            out.append(tokens[i])
            i += 1
    return out


def train(counts: dict[bytes, int], n_merges: int) -> list[tuple[bytes, bytes]]:
    """spec 1.4-1.7, recounting every pair from scratch at every step."""
    words = {w: [bytes([b]) for b in w] for w, c in counts.items() if c > 0}
    merges = []
    for _ in range(n_merges):
        pairs: Counter = Counter()
        for w, tokens in words.items():
            for pair in zip(tokens, tokens[1:]):
                pairs[pair] += counts[w]
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))  # ties: greatest (bytes, bytes)
        merges.append(best)
        words = {w: merge_word(tokens, best) for w, tokens in words.items()}
    return merges


def train_text(text: str, vocab_size: int, specials=(), pattern: str = GPT2_PATTERN):
    """Reference for train_bpe on a string: (vocab, merges) laid out as spec 1.1 says."""
    specials = list(dict.fromkeys(specials))
    merges = train(word_counts(text, specials, pattern), vocab_size - 256 - len(specials))
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in merges:
        vocab[len(vocab)] = a + b
    for s in specials:
        if s.encode("utf-8") not in vocab.values():
            vocab[len(vocab)] = s.encode("utf-8")
    return vocab, merges


def encode(text: str, vocab: dict[int, bytes], merges, specials=(), pattern=GPT2_PATTERN):
    """spec 2: specials first, pre-tokenize, merge by rank (one at a time, leftmost first)."""
    rank = {pair: r for r, pair in enumerate(merges)}  # a merge listed twice: its last rank
    to_id = {}
    for i in sorted(vocab):
        to_id.setdefault(vocab[i], i)
    special_id = {}
    next_id = max(vocab) + 1
    for s in dict.fromkeys(specials):
        if s.encode() not in to_id:
            to_id[s.encode()] = next_id
            next_id += 1
        special_id[s] = to_id[s.encode()]
    pat = regex.compile(pattern)
    ids = []
    for piece, is_special in split_specials(text, specials):
        if is_special:
            ids.append(special_id[piece])
            continue
        for m in pat.finditer(piece):
            tokens = [bytes([b]) for b in m.group().encode("utf-8")]
            while len(tokens) > 1:
                ranks = [rank.get(p, float("inf")) for p in zip(tokens, tokens[1:])]
                best = min(range(len(ranks)), key=lambda i: ranks[i])  # leftmost lowest
                if ranks[best] == float("inf"):
                    break
                tokens[best:best + 2] = [tokens[best] + tokens[best + 1]]
            ids.extend(to_id[t] for t in tokens)
    return ids
