/* unit_cache.h - the ids of units encoded by earlier calls, kept within a memory bound.
 *
 * bpe_encode looks each unit of a long input up here where it occurs (encode.c), and keeps the
 * ids of those it had to encode, so a unit met again, in the same call or a later one (most of
 * them, in real text), is one lookup instead of a split and the BPE of its pre-tokens. A
 * unit's ids depend only on its bytes (it is split and merged alone), so an entry never goes
 * stale while the encoder and scanner it was made with live: one cache serves one tokenizer.
 *
 * Bounded: the memory is cut into UNIT_CACHE_SHARDS shards of equal size, each a table of
 * slots and an arena of entries, reserved when the cache is made and touched as it fills. A
 * shard that reaches its bound keeps what it holds and takes no more, until the units it
 * lacks keep coming back (unit_cache.c); then it is emptied whole and fills again (no
 * eviction order to keep up). So a cache never holds more than its bound, even on text where
 * every unit is new.
 *
 * Touched as it fills: a shard starts in a small region of ordinary pages, packed with the
 * other shards' small regions, and moves to its large region, on huge pages, only when it
 * outgrows the small one. Huge pages pay on a table of tens of megabytes probed at random
 * (fewer TLB misses), but each is cleared whole when first touched: with every shard on them
 * from the start, the first long encode of a process touched all 64 MB of the default cache
 * for a few thousand entries.
 *
 * Shared: several threads may use one cache at once without the GIL. A lookup takes no lock
 * (unit_cache.c: a seqlock per shard); a writer only tries a shard's lock a few times, never
 * waits on it, and an entry that cannot be added is dropped, which costs a unit's encoding at
 * worst. So no thread blocks on another, and a lock left taken (by a thread that vanished in a
 * fork) only stops that shard from growing. */
#ifndef UNIT_CACHE_H
#define UNIT_CACHE_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "bpe.h"
#include "word_table.h"

#define UNIT_CACHE_SHARDS 64
#define UNIT_CACHE_INLINE_KEY 16 /* key bytes a slot holds */

/* The arena is read and written a 32-bit word at a time, as atomics (relaxed: the plain moves
 * of any other word): a reader may read words a writer is rewriting, and the seqlock then
 * throws what it read away, which C11 allows of atomics only. Entries are whole words; a
 * key's last word is zero past its end. */
typedef _Atomic uint32_t arena_word;
_Static_assert(sizeof(arena_word) == 4, "arena offsets count 4-byte words");

/* The layout is here so that the lookup, made once per unit of the input, is inlined; only
 * unit_cache.c writes to a cache. */
typedef struct {
    /* 0: a free slot; else the unit's hash with its low 24 bits replaced by the key's length
     * (bits 12-23) and the number of ids (bits 0-11, at least 1, so a tag is never 0). */
    _Atomic uint64_t tag;
    _Atomic uint64_t head, tail; /* the key's first sixteen bytes, as word_key has them */
    /* A key of up to 16 bytes with up to inline_ids ids: the ids, packed id_bits apart. Else
     * the offset in the arena of the ids, then the key's bytes past the sixteenth. */
    _Atomic uint64_t value;
} cache_slot;

typedef struct {
    _Alignas(64) atomic_flag busy; /* the writers' lock; each shard starts a cache line */
    _Atomic uint32_t version;      /* odd while slots are moved or cleared */
    _Atomic uint32_t n_slots;      /* slots in use, a power of two; 0 until first written */
    /* The slots and arena in use: the small region's, then the large region's. Set only by
     * writers while the version is odd. A reader may pair the small arena with an offset
     * into the large one (at most max_arena), and a prefetch the small slots with the large
     * n_slots (at most max_slots): the small regions lie first in their block, before all 64
     * large ones, so it still reads inside the block. */
    _Atomic(cache_slot *) slots;
    _Atomic(arena_word *) arena;
    uint32_t n_entries, arena_used, arena_room; /* arena_room: the bytes of the arena in use */
    cache_slot *large_slots;                    /* room for max_slots; NULL: no large region */
    arena_word *large_arena;                    /* max_arena bytes */
    /* At its bound, a shard is full: it keeps what it holds and takes no more, until the
     * units it lacks keep coming back; then it starts afresh (unit_cache.c). recurring:
     * its misses, since it became full or was last emptied, of units it had missed before.
     * dropped: the entries its spent arena had no room for while its slots had, since it
     * was last emptied. Writers only. */
    int full;
    uint32_t recurring, dropped;
} cache_shard;

struct bpe_unit_cache {
    cache_shard shard[UNIT_CACHE_SHARDS];
    /* The small regions' bound (slots, arena bytes), and every shard's bound; max_slots 0:
     * keep nothing. max_arena >= small_arena: offsets are checked against it. */
    uint32_t small_slots, small_arena, max_slots, max_arena;
    /* Every shard's slots in one block: the small regions, then the large ones; and their
     * arenas likewise in another. */
    void *slot_block, *arena_block;
    /* How ids pack into a slot's value: 64 / id_bits of them, id_bits wide (16, 21 or 32, the
     * fewest that hold every id of the vocabulary). With 16-bit ids four fit, and a slot then
     * holds every id of 89% of realmix's unit occurrences (its 50 000-token o200k vocabulary;
     * one or two ids: 74%); the others read the arena too, a second line that no prefetch
     * asked for. */
    uint32_t id_bits, inline_ids;
    uint64_t id_mask;
    _Atomic int64_t lookups, hits;
};

static inline cache_shard *unit_cache_shard(bpe_unit_cache *c, uint64_t hash) {
    return &c->shard[hash >> 58]; /* the top six bits: 64 shards */
}

static inline uint64_t unit_cache_tag(const word_key *k, int64_t n_ids) {
    return (k->hash & ~(uint64_t)0xFFFFFF) | (uint64_t)k->len << 12 | (uint64_t)n_ids;
}

static inline uint32_t unit_cache_home(uint64_t hash, uint32_t n_slots) {
    return (uint32_t)(hash >> 24) & (n_slots - 1);
}

/* Whether an entry's ids stay in its slot. */
static inline int unit_cache_is_inline(const bpe_unit_cache *c, int64_t len, int64_t n_ids) {
    return len <= UNIT_CACHE_INLINE_KEY && n_ids <= c->inline_ids;
}

/* Bytes b[0 .. n) as the arena's words hold them: 4 at a time, the last word zero past n. */
static inline uint32_t unit_cache_word(const uint8_t *b, int64_t n) {
    uint32_t w = 0;
    memcpy(&w, b, n < 4 ? (size_t)n : 4);
    return w;
}

/* Whether an entry's words from `at` hold the bytes b[0 .. n), n > 0. */
static inline int unit_cache_same_words(const arena_word *at, const uint8_t *b, int64_t n) {
    for (int64_t i = 0; i < n; i += 4) {
        uint32_t word = atomic_load_explicit(&at[i / 4], memory_order_relaxed);
        if (word != unit_cache_word(b + i, n - i)) return 0;
    }
    return 1;
}

/* Whether an arena offset read from a slot, maybe while a writer changed it, starts `bytes`
 * bytes (a multiple of 4) that lie inside the arena's block: if not, the slot was read
 * mid-change (the seqlock then throws the result away). */
static inline int unit_cache_in_arena(const bpe_unit_cache *c, uint64_t at, uint64_t bytes) {
    return at % 4 == 0 && at <= c->max_arena && bytes <= c->max_arena - at; /* (no wrap) */
}

/* Whether the slot's entry, of tag `tag`, has the key k: the caller has compared the tags,
 * so the lengths agree. Past sixteen bytes, the key's rest is in the arena, after the ids. */
static inline int unit_cache_same_key(const bpe_unit_cache *c, const arena_word *arena,
                                      const cache_slot *slot, uint64_t tag, const word_key *k) {
    if (atomic_load_explicit(&slot->head, memory_order_relaxed) != k->head ||
        atomic_load_explicit(&slot->tail, memory_order_relaxed) != k->tail)
        return 0;
    if (k->len <= UNIT_CACHE_INLINE_KEY) return 1;
    uint64_t at = atomic_load_explicit(&slot->value, memory_order_relaxed);
    uint64_t ids = 4 * (tag & 0xFFF), rest = (uint64_t)k->len - UNIT_CACHE_INLINE_KEY;
    if (!unit_cache_in_arena(c, at, ids + (rest + 3) / 4 * 4)) return 0;
    return unit_cache_same_words(arena + (at + ids) / 4, k->ptr + UNIT_CACHE_INLINE_KEY,
                                 (int64_t)rest);
}

/* Units with longer keys or more ids are not kept: they are rare, and one such entry
 * would crowd out many. */
#define UNIT_CACHE_MAX_KEY 1024
#define UNIT_CACHE_MAX_IDS 1024

/* Copies n >= 1 ids from an arena entry. */
static inline void unit_cache_copy_ids(int32_t *to, const arena_word *from, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        to[i] = (int32_t)atomic_load_explicit(&from[i], memory_order_relaxed);
}

/* 1 if the cache holds the unit k (of at least two bytes): its ids are then in ids and their
 * number in *n_ids; else 0. ids needs room for k->len ids: a lookup may write there before it
 * finds that what it read changed meanwhile (and then returns 0), never more than k->len ids,
 * and a hit on a unit of one id writes two (two ids are written without a branch on one or
 * two: those follow each other in no pattern).
 *
 * A writer may be rewriting the slots and arena words this reads, all atomics: what is read
 * while the version changes is thrown away (a seqlock), and every offset read from a slot is
 * checked to lie inside the arena's block, which lives as long as the cache. */
static inline int unit_cache_find(bpe_unit_cache *c, const word_key *k, int32_t *ids,
                                  int64_t *n_ids) {
    if (!c->max_slots || k->len > UNIT_CACHE_MAX_KEY) return 0;
    cache_shard *sh = unit_cache_shard(c, k->hash);
    uint32_t version = atomic_load_explicit(&sh->version, memory_order_acquire);
    uint32_t n_slots = atomic_load_explicit(&sh->n_slots, memory_order_acquire);
    if (n_slots == 0 || (version & 1)) return 0;
    const cache_slot *slots = atomic_load_explicit(&sh->slots, memory_order_relaxed);
    const arena_word *arena = atomic_load_explicit(&sh->arena, memory_order_relaxed);
    uint64_t want = unit_cache_tag(k, 0);
    int found = 0;
    /* At most three quarters full, a free slot ends the probe; n_slots probes bound it even
     * when a writer is moving slots meanwhile. */
    for (uint32_t i = unit_cache_home(k->hash, n_slots), left = n_slots; left; left--) {
        const cache_slot *slot = &slots[i];
        uint64_t tag = atomic_load_explicit(&slot->tag, memory_order_acquire);
        if (tag == 0) break;
        if ((tag & ~(uint64_t)0xFFF) == want && unit_cache_same_key(c, arena, slot, tag, k)) {
            uint64_t value = atomic_load_explicit(&slot->value, memory_order_relaxed);
            int64_t n = (int64_t)(tag & 0xFFF);
            if (n > UNIT_CACHE_MAX_IDS || n > k->len) break; /* a slot read mid-change */
            if (unit_cache_is_inline(c, k->len, n)) {
                uint64_t mask = c->id_mask;
                unsigned bits = c->id_bits;
                ids[0] = (int32_t)(value & mask);
                ids[1] = (int32_t)(value >> bits & mask);
                if (n > 2) { /* (only when inline_ids is 3 or 4, so these shifts are < 64) */
                    ids[2] = (int32_t)(value >> 2 * bits & mask);
                    if (n > 3) ids[3] = (int32_t)(value >> 3 * bits & mask);
                }
            } else {
                if (!unit_cache_in_arena(c, value, 4 * (uint64_t)n)) break;
                unit_cache_copy_ids(ids, arena + value / 4, n);
            }
            *n_ids = n;
            found = 1;
            break;
        }
        i = (i + 1) & (n_slots - 1);
    }
    atomic_thread_fence(memory_order_acquire);
    return found && atomic_load_explicit(&sh->version, memory_order_relaxed) == version;
}

/* Asks for the slot where a lookup of k starts, ahead of the lookup. */
static inline void unit_cache_prefetch(bpe_unit_cache *c, const word_key *k) {
#if defined(__GNUC__) || defined(__clang__)
    const cache_shard *sh = unit_cache_shard(c, k->hash);
    uint32_t n_slots = atomic_load_explicit(&sh->n_slots, memory_order_relaxed);
    const cache_slot *slots = atomic_load_explicit(&sh->slots, memory_order_relaxed);
    if (n_slots) __builtin_prefetch(&slots[unit_cache_home(k->hash, n_slots)]);
#else
    (void)c, (void)k;
#endif
}

/* Keeps the ids of the unit k, if they fit the limits above and the shard's lock is free. */
void unit_cache_add(bpe_unit_cache *c, const word_key *k, const int32_t *ids, int64_t n_ids);

/* Adds a call's tally to the cache's statistics. */
void unit_cache_tally(bpe_unit_cache *c, int64_t lookups, int64_t hits);

#endif
