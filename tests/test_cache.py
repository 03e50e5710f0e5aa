"""The cache of encoded units a Tokenizer keeps from call to call (csrc/unit_cache.h): the
same ids with it as without, within its bound, shared safely by threads, used by every
method that encodes long inputs."""
from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bpe_cffi
from bpe_cffi import Tokenizer

EOT = "<|endoftext|>"
FAMILIES = ["gpt2", "cl100k", "o200k", r"\w+|[^\w\s]+|\s+"]  # the last: the regex path


@pytest.fixture(scope="module")
def trained():
    return bpe_cffi.train_bpe(bpe_cffi.sample_path(), 2000, [EOT])


def _tokenizer(trained, pattern="gpt2", **kw) -> Tokenizer:
    return Tokenizer(*trained, special_tokens=[EOT], pattern=pattern, **kw)


def _new_words(seed: int, n: int) -> str:
    """n words of letters and marks no earlier call has seen, with odd spacing and
    punctuation: every unit new."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzäöüéÉ字Ω\u0301"
    out = []
    for _ in range(n):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        out.append(rng.choice([" ", "  ", "\n", "\t", " '"]) + word
                   + rng.choice(["", ",", ".\n", "'s"]))
    return "".join(out)


@pytest.mark.parametrize("pattern", FAMILIES)
def test_same_ids_with_and_without_the_cache(trained, real_text, pattern):
    # Each call from 64 KB on looks its distinct units up; later calls find what earlier
    # ones kept, and a small cache empties its shards again and again on the way.
    plain = _tokenizer(trained, pattern, cache_bytes=0)
    cached = _tokenizer(trained, pattern)
    small = _tokenizer(trained, pattern, cache_bytes=300_000)
    texts = [real_text[:200_000], real_text[100_000:400_000], _new_words(1, 30_000),
             real_text[:200_000], real_text, _new_words(2, 150_000)]  # (shards outgrow
    # their small region: over 1 024 entries each)
    for text in texts:
        want = plain.encode_to_numpy(text)
        assert np.array_equal(cached.encode_to_numpy(text), want)
        assert np.array_equal(small.encode_to_numpy(text), want)
    info = cached.cache_info()
    assert 0 < info["hits"] < info["lookups"] and info["entries"] > 0
    assert plain.cache_info() == {"entries": 0, "bytes": 0, "lookups": 0, "hits": 0}


@pytest.mark.parametrize("offset", [0, 100_000, 3_000_000])  # ids 16, 21 and 32 bits wide
def test_ids_of_every_width_come_back_whole(trained, real_text, offset):
    # A slot packs as many ids as the vocabulary's widest id leaves room for (four, three or
    # two): the same ids with the cache as without, for units of one id to many.
    vocab, merges = trained
    shifted = {(i + offset if i >= 256 else i): b for i, b in vocab.items()}
    plain = Tokenizer(shifted, merges, special_tokens=[EOT], cache_bytes=0)
    cached = Tokenizer(shifted, merges, special_tokens=[EOT])
    want = _tokenizer(trained, cache_bytes=0).encode_to_numpy(real_text).astype(np.int64)
    want[want >= 256] += offset
    for _ in range(2):  # the second time, from the cache
        assert np.array_equal(cached.encode_to_numpy(real_text), want)
    assert cached.cache_info()["hits"] > 0
    assert np.array_equal(plain.encode_to_numpy(real_text), want)
    # (the text's words, as units of one id to five and more)
    lengths = {len(ids) for ids in cached.encode_batch([" " + w for w in real_text.split()])}
    assert {1, 2, 3, 4, 5} <= lengths


@given(words=st.lists(st.sampled_from(["a", " b", "cd ", "\n", "é", "字", "🙂", "'s", "  ", "1",
                                       "22", " 333", "\r\n", ".", "/", "x\u0301", "ǅa", "Ab"]),
                      min_size=1, max_size=40),
       repeat=st.integers(1, 3))
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.function_scoped_fixture])
def test_cached_units_in_new_surroundings(trained, words, repeat):
    # The same units met again inside other texts (a unit's ids depend on its bytes alone).
    plain = _tokenizer(trained, "o200k", cache_bytes=0)
    cached = _tokenizer(trained, "o200k", cache_bytes=1 << 20)
    base = "".join(words)
    for k in range(repeat):
        text = (base + " " * k + str(k)) * (70_000 // len(base) + 1)
        assert np.array_equal(cached.encode_to_numpy(text), plain.encode_to_numpy(text))


@pytest.mark.parametrize("n_words", [30_000, 200_000])
def test_second_call_finds_every_unit(trained, n_words):
    # (Units of over 1 024 bytes or ids are never kept: these words are shorter.) 200 000
    # units: every shard outgrows its small region, then doubles again in its large one. One
    # thread: an entry whose shard another thread holds is dropped.
    tok = _tokenizer(trained, cache_bytes=64 << 20, num_threads=1)
    text = _new_words(7, n_words)
    tok.encode_to_numpy(text)
    before = tok.cache_info()
    tok.encode_to_numpy(text[:])
    after = tok.cache_info()
    looked = after["lookups"] - before["lookups"]
    assert looked > 0 and after["hits"] - before["hits"] == looked


@pytest.mark.parametrize("bound", [300_000, 4 << 20, 24 << 20])  # (the last: two regions)
def test_memory_stays_within_the_bound(trained, bound):
    # Text where every unit is new: the shards fill to their bound and hold there.
    tok = _tokenizer(trained, cache_bytes=bound)
    for seed in range(6):
        tok.encode_to_numpy(_new_words(seed, 40_000))
        info = tok.cache_info()
        assert 0 < info["bytes"] <= bound
    assert info["entries"] > 0


def _misses(tok: Tokenizer, text: str) -> tuple[int, int]:
    """(misses, lookups) of the cache over one encode."""
    before = tok.cache_info()
    tok.encode_to_numpy(text)
    after = tok.cache_info()
    lookups = after["lookups"] - before["lookups"]
    return lookups - (after["hits"] - before["hits"]), lookups


def test_a_full_cache_keeps_the_units_that_recur(trained, real_text):
    # The same text again and again, each time with 4 000 words never seen before: a 1 MB
    # cache fills up. Its shards keep what they hold, so from the second round on only the
    # new words miss (about half the first round's misses). Shards emptied whenever full
    # threw out the recurring units with the new ones: every round missed as much as the
    # first.
    tok = _tokenizer(trained, cache_bytes=1 << 20)
    text = real_text[:200_000]
    misses = [_misses(tok, text + _new_words(seed, 4000))[0] for seed in range(8)]
    assert sorted(misses[1:])[3] < 0.7 * misses[0], misses


def test_a_full_cache_takes_units_that_keep_coming_back(trained, real_text):
    # A cache full of real text and of words met once, kept full for ten rounds, then the
    # same text with 2 000 other words in every round (a twentieth of its lookups): those
    # words miss again and again, and the shards start afresh to take them. Shards emptied
    # only when one of their recent lookups in eight missed kept missing them in every round
    # (1 781-1 850 misses of 40 726 lookups).
    tok = _tokenizer(trained, cache_bytes=1 << 20)
    text = real_text[:200_000]
    tok.encode_to_numpy(text + _new_words(0, 4000))
    for seed in range(10):
        tok.encode_to_numpy(text + _new_words(seed + 1, 40))
    recurring = text + _new_words(99, 2000)
    for _ in range(6):
        missed, lookups = _misses(tok, recurring)
    assert missed < 0.02 * lookups, (missed, lookups)


@pytest.mark.parametrize("rounds_full", [0, 40])
def test_a_full_cache_takes_text_that_changed(trained, real_text, rounds_full):
    # A full cache (kept full for a while: its shards then miss a few units in a hundred),
    # then text made of other units only, three times over: its units miss again and again,
    # the shards start afresh, and the new text is cached. Shards emptied when a share of
    # the lookups since they became full missed took longer the longer they had been full:
    # after 40 rounds the new text still missed 90% of its lookups on its third pass.
    tok = _tokenizer(trained, cache_bytes=1 << 20)
    text = real_text[:200_000]
    tok.encode_to_numpy(text + _new_words(0, 4000))
    for seed in range(rounds_full):
        tok.encode_to_numpy(text + _new_words(seed + 1, 40))
    other = _new_words(100, 8000) * 3
    for _ in range(3):
        missed, lookups = _misses(tok, other)
    assert missed < 0.2 * lookups, (missed, lookups)


@pytest.mark.parametrize("bound", [500_000, 24 << 20])
def test_threads_share_one_cache(trained, real_text, bound):
    # Eight threads encode overlapping texts at once through one cache (shards are emptied,
    # or moved to their large region, while other threads read them): every result as
    # without a cache.
    plain = _tokenizer(trained, cache_bytes=0)
    shared = _tokenizer(trained, cache_bytes=bound, num_threads=2)
    texts = [real_text[k * 40_000:k * 40_000 + 150_000] + _new_words(k, 12_000)
             for k in range(8)]
    want = [plain.encode(t) for t in texts]
    results = [None] * 8

    def work(k):
        results[k] = [shared.encode(texts[(k + j) % 8]) for j in range(3)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(8):
        assert results[k] == [want[(k + j) % 8] for j in range(3)]


def test_every_method_uses_it(trained, real_text, tmp_path):
    text = real_text[:300_000]
    tok = _tokenizer(trained)
    tok.encode(text)
    found = tok.cache_info()["hits"]
    tok.encode_batch([text[:100_000], text[100_000:]])
    assert tok.cache_info()["hits"] > found
    found = tok.cache_info()["hits"]
    list(tok.encode_iterable(text.splitlines(keepends=True)))
    assert tok.cache_info()["hits"] > found
    found = tok.cache_info()["hits"]
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    tok.encode_file(str(path), str(tmp_path / "ids.npy"), num_workers=1)
    assert tok.cache_info()["hits"] > found


def test_cache_bytes_is_checked_and_kept(trained):
    with pytest.raises(TypeError, match="cache_bytes"):
        _tokenizer(trained, cache_bytes=1.5)
    with pytest.raises(ValueError, match="cache_bytes"):
        _tokenizer(trained, cache_bytes=-1)
    with pytest.raises(ValueError, match=r"cache_bytes must be from 0 to 2\*\*63 - 1"):
        _tokenizer(trained, cache_bytes=2**63)  # was an OverflowError at the C boundary
    with pytest.raises(TypeError, match="cache_bytes must be an int, not bool"):
        _tokenizer(trained, cache_bytes=True)
    assert _tokenizer(trained, cache_bytes=np.int64(1 << 20)).cache_bytes == 1 << 20
    tok = _tokenizer(trained, cache_bytes=1 << 20)
    assert tok.cache_bytes == 1 << 20
    assert pickle.loads(pickle.dumps(tok)).cache_bytes == 1 << 20
    assert _tokenizer(trained).cache_bytes == bpe_cffi.tokenizer.DEFAULT_CACHE_BYTES
    tiny = _tokenizer(trained, cache_bytes=1000)  # too small to keep anything: never used
    tiny.encode_to_numpy("word " * 20_000)
    assert tiny.cache_info()["entries"] == 0


def test_long_units_in_a_cache_whose_bound_is_no_doubling(trained):
    # 199 168 bytes: each shard has 64 slots and a 1 064-byte arena, which these long units
    # (their ids and the key past 16 bytes: up to ~600 bytes an entry) fill in a few entries:
    # the shard must then be full (keeping what it holds, or starting afresh) rather than
    # write past its arena.
    plain = _tokenizer(trained, cache_bytes=0)
    cached = _tokenizer(trained, cache_bytes=199_168)
    rng = random.Random(7)
    words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
                     for n in (rng.randint(40, 120) for _ in range(20_000)))
    for start in (0, 1000, 0):
        text = words[start:]
        assert np.array_equal(cached.encode_to_numpy(text), plain.encode_to_numpy(text))


def test_an_entry_too_large_for_any_arena_empties_nothing(trained):
    # 300 000 bytes: arenas of 2 639 bytes. A unit of 1 020 bytes of CJK characters rare
    # enough to stay bytes (over 300 ids: with its key, an entry past 2 KB) can never be
    # kept; it must not empty its shard on the way.
    tok = _tokenizer(trained, cache_bytes=300_000)
    tok.encode_to_numpy(_new_words(3, 20_000))
    kept = tok.cache_info()["entries"]
    rng = random.Random(5)
    long_words = " ".join("".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(340))
                          for _ in range(200))
    tok.encode_to_numpy(long_words)
    assert tok.cache_info()["entries"] >= kept


def test_a_spent_arena_leaves_room_for_short_units(trained):
    # 4 MB: arenas of 32 KB. 1 500 long units (800 letters: an entry of ~2 KB) spend them
    # with a few entries a shard, the slots nearly empty; then 20 000 six-letter units, twice
    # (most of 5 to 7 ids with this vocabulary: entries in the arena too). A shard drops them
    # while its arena is spent, takes those its slots hold alone, and starts afresh once it
    # has dropped as many as it holds. Marked full by its spent arena, a shard refused them
    # all on the second pass too (20 000 misses of 20 000): with so few entries, it could
    # not tell that they came back.
    tok = _tokenizer(trained, cache_bytes=4 << 20, num_threads=1)
    rng = random.Random(3)

    def letters(n: int) -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))

    tok.encode_to_numpy(" ".join(letters(800) for _ in range(1500)))
    short = " ".join(letters(6) for _ in range(20_000))
    _misses(tok, short)
    missed, lookups = _misses(tok, short)
    assert missed < 0.5 * lookups, (missed, lookups)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmRSS from /proc")
def test_a_small_encode_makes_little_of_the_cache_resident():
    # A shard starts in a small region of ordinary pages and moves to huge pages only when it
    # outgrows it. With every shard on huge pages from the start, the first long encode of a
    # process made the default 64 MB cache resident for a few thousand entries.
    code = textwrap.dedent("""
        import bpe_cffi
        vocab, merges = bpe_cffi.train_bpe(bpe_cffi.sample_path(), 2000, ["<|endoftext|>"])
        tok = bpe_cffi.Tokenizer(vocab, merges, special_tokens=["<|endoftext|>"])
        text = open(bpe_cffi.sample_path(), encoding="utf-8").read()

        def rss():
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

        tok.encode_to_numpy(text[:1000])  # below the cache's threshold: imports, threads
        before = rss()
        tok.encode_to_numpy(text)
        print((rss() - before) * 1024, tok.cache_info()["entries"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    grown, entries = map(int, out.split())
    assert entries > 1000 and grown < 16 << 20, (grown, entries)
