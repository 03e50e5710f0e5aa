/* unit_cache.c - see unit_cache.h.
 *
 * A unit's shard is picked by the top bits of its hash and its slot by the bits above the
 * low 24, so the two are independent. A shard is a table of 32-byte slots (open
 * addressing, linear probing, at most half full) and an arena. A slot holds all a lookup of a
 * unit of up to 16 bytes and two ids needs (most units of real text): its hash, its key, its
 * ids; a longer entry keeps its ids and the rest of its key in the arena.
 *
 * Reads take no lock, so that a lookup of a unit, made once per unit of the input, costs
 * loads only. Writers take the shard's lock (only tried, as unit_cache.h says) and:
 * - add an entry by filling a free slot and then publishing its tag (release), so a reader
 *   that sees the tag sees the rest;
 * - move or clear slots (the table doubled, or the shard emptied at its bound) with the
 *   shard's version odd, and bump it again when done. A reader notes the version before and
 *   after its lookup: if it changed, what it read is thrown away and the unit counts as a
 *   miss (a seqlock).
 * Every shard's slots and arena are allocated once, at their bound, when the cache is made,
 * and freed with it, so a reader never reads freed memory; the slots in use grow by doubling
 * inside that block, which the kernel backs as it is touched. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (big_alloc.h) */
#include "unit_cache.h"

#include <stdlib.h>
#include <string.h>

#include "big_alloc.h"

#define LOCK_TRIES 64  /* tries of a shard's lock before giving up on it */
#define FIRST_SLOTS 64 /* a shard's slots in use when first written; doubled up to the bound */

int bpe_unit_cache_new(int64_t max_bytes, bpe_unit_cache **out) {
    if (!out || max_bytes < 0) return BPE_EINVAL;
    *out = NULL;
    bpe_unit_cache *c = aligned_alloc(64, sizeof *c);
    if (!c) return BPE_ENOMEM;
    memset(c, 0, sizeof *c);
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) {
        atomic_flag_clear(&c->shard[i].busy);
        atomic_init(&c->shard[i].version, 0);
        atomic_init(&c->shard[i].n_slots, 0);
    }
    atomic_init(&c->lookups, 0);
    atomic_init(&c->hits, 0);
    /* A shard: three quarters of its bytes slots, a quarter arena. Most entries live in
     * their slot alone (two 32-byte slots each at half load); the arena holds the longer
     * ones. Offsets are 32-bit, so a shard stays under 4 GB. */
    int64_t per_shard = max_bytes / UNIT_CACHE_SHARDS;
    if (per_shard > ((int64_t)1 << 31)) per_shard = (int64_t)1 << 31;
    int64_t slot_bytes = per_shard / 4 * 3;
    uint32_t n_slots = FIRST_SLOTS;
    if ((int64_t)n_slots * (int64_t)sizeof(cache_slot) > slot_bytes) {
        *out = c; /* too small to keep anything: a cache that always misses */
        return BPE_OK;
    }
    while ((int64_t)n_slots * 2 * (int64_t)sizeof(cache_slot) <= slot_bytes) n_slots *= 2;
    c->max_slots = n_slots;
    c->max_arena = (uint32_t)(per_shard - (int64_t)n_slots * (int64_t)sizeof(cache_slot));
    /* Every shard's slots in one block and every arena in another, on huge pages when large
     * (big_alloc.h): a lookup lands anywhere in them. Nothing is written up front, so the
     * kernel backs only what the shards come to use. */
    uint64_t slot_block = (uint64_t)UNIT_CACHE_SHARDS * n_slots * sizeof(cache_slot);
    uint64_t arena_block = (uint64_t)UNIT_CACHE_SHARDS * c->max_arena;
    if (slot_block > SIZE_MAX || arena_block > SIZE_MAX) { /* a 32-bit size_t */
        bpe_unit_cache_free(c);
        return BPE_ENOMEM;
    }
    c->slot_block = big_alloc((size_t)slot_block);
    c->arena_block = big_alloc(arena_block ? (size_t)arena_block : 1);
    if (!c->slot_block || !c->arena_block) {
        bpe_unit_cache_free(c);
        return BPE_ENOMEM;
    }
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) {
        c->shard[i].slots = (cache_slot *)c->slot_block + (size_t)i * n_slots;
        c->shard[i].arena = (uint8_t *)c->arena_block + (size_t)i * c->max_arena;
    }
    *out = c;
    return BPE_OK;
}

void bpe_unit_cache_free(bpe_unit_cache *c) {
    if (!c) return;
    free(c->slot_block);
    free(c->arena_block);
    free(c);
}

static int shard_lock(cache_shard *sh) {
    for (int i = 0; i < LOCK_TRIES; i++)
        if (!atomic_flag_test_and_set_explicit(&sh->busy, memory_order_acquire)) return 1;
    return 0;
}

static void shard_unlock(cache_shard *sh) {
    atomic_flag_clear_explicit(&sh->busy, memory_order_release);
}

/* Where the entry of tag `tag` goes in slots (a free slot: the key is not there). */
static cache_slot *free_slot(cache_slot *slots, uint32_t n_slots, uint64_t tag) {
    uint32_t i = unit_cache_home(tag, n_slots);
    while (atomic_load_explicit(&slots[i].tag, memory_order_relaxed) != 0)
        i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

/* Starts and ends a change to a shard that readers must not trust midway. */
static void begin_change(cache_shard *sh) {
    atomic_fetch_add_explicit(&sh->version, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
}

static void end_change(cache_shard *sh) {
    atomic_fetch_add_explicit(&sh->version, 1, memory_order_release);
}

static void shard_clear(cache_shard *sh) {
    begin_change(sh);
    uint32_t n_slots = atomic_load_explicit(&sh->n_slots, memory_order_relaxed);
    for (uint32_t i = 0; i < n_slots; i++)
        atomic_store_explicit(&sh->slots[i].tag, 0, memory_order_relaxed);
    sh->n_entries = sh->arena_used = 0;
    end_change(sh);
}

/* Copies a slot's words (a writer's move: readers see them only through the seqlock). */
static void copy_slot(cache_slot *to, const cache_slot *from) {
    atomic_store_explicit(&to->head, atomic_load_explicit(&from->head, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&to->tail, atomic_load_explicit(&from->tail, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&to->value, atomic_load_explicit(&from->value, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&to->tag, atomic_load_explicit(&from->tag, memory_order_relaxed),
                          memory_order_relaxed);
}

/* The shard's slots in use doubled (under its lock), its entries put in again. */
static void shard_double(cache_shard *sh) {
    uint32_t n_old = atomic_load_explicit(&sh->n_slots, memory_order_relaxed);
    cache_slot *old = malloc((size_t)n_old * sizeof *old), *slots = sh->slots;
    if (!old) {
        shard_clear(sh); /* no memory to move them: start afresh */
        return;
    }
    begin_change(sh);
    for (uint32_t i = 0; i < n_old; i++) copy_slot(&old[i], &slots[i]);
    uint32_t n_slots = 2 * n_old;
    for (uint32_t i = 0; i < n_slots; i++)
        atomic_store_explicit(&slots[i].tag, 0, memory_order_relaxed);
    for (uint32_t i = 0; i < n_old; i++) {
        uint64_t tag = atomic_load_explicit(&old[i].tag, memory_order_relaxed);
        if (tag != 0) copy_slot(free_slot(slots, n_slots, tag), &old[i]);
    }
    atomic_store_explicit(&sh->n_slots, n_slots, memory_order_release); /* after the zeroing */
    end_change(sh);
    free(old);
}

/* Starts a shard's table when first written (under its lock). */
static void shard_start(cache_shard *sh) {
    if (atomic_load_explicit(&sh->n_slots, memory_order_relaxed) != 0) return;
    for (uint32_t i = 0; i < FIRST_SLOTS; i++)
        atomic_store_explicit(&sh->slots[i].tag, 0, memory_order_relaxed);
    atomic_store_explicit(&sh->n_slots, FIRST_SLOTS, memory_order_release);
}

/* The bytes of an entry's arena part (its ids, then its key past the sixteenth byte), or 0
 * for an entry held in its slot alone. */
static int64_t arena_size(int64_t len, int64_t n_ids) {
    if (unit_cache_is_inline(len, n_ids)) return 0;
    int64_t rest = len > UNIT_CACHE_INLINE_KEY ? len - UNIT_CACHE_INLINE_KEY : 0;
    return (4 * n_ids + rest + 3) & ~(int64_t)3; /* entries 4-aligned */
}

void unit_cache_add(bpe_unit_cache *c, const word_key *k, const int32_t *ids, int64_t n_ids) {
    if (!c->max_slots || k->len > UNIT_CACHE_MAX_KEY || n_ids > UNIT_CACHE_MAX_IDS || n_ids < 1 ||
        n_ids > k->len || arena_size(k->len, n_ids) > c->max_arena) /* (it would never fit) */
        return;
    cache_shard *sh = unit_cache_shard(c, k->hash);
    if (!shard_lock(sh)) return;
    shard_start(sh);
    int64_t found;
    int32_t scratch[UNIT_CACHE_MAX_IDS];
    /* Not there yet (another thread may have added it meanwhile). */
    if (!unit_cache_find(c, k, scratch, &found)) {
        uint32_t size = (uint32_t)arena_size(k->len, n_ids); /* at most max_arena: see above */
        if (sh->arena_used + size > c->max_arena) shard_clear(sh);
        uint32_t n_slots = atomic_load_explicit(&sh->n_slots, memory_order_relaxed);
        if (sh->n_entries + 1 > n_slots / 2) {
            if (n_slots < c->max_slots) shard_double(sh);
            else shard_clear(sh); /* at the bound: start afresh */
        }
        uint64_t tag = unit_cache_tag(k, n_ids), value;
        if (size) {
            uint8_t *entry = sh->arena + sh->arena_used;
            memcpy(entry, ids, 4 * (size_t)n_ids);
            if (k->len > UNIT_CACHE_INLINE_KEY) /* the key past its sixteenth byte */
                memcpy(entry + 4 * n_ids, k->ptr + UNIT_CACHE_INLINE_KEY,
                       (size_t)(k->len - UNIT_CACHE_INLINE_KEY));
            value = sh->arena_used;
            sh->arena_used += size;
        } else {
            value = (uint64_t)(uint32_t)ids[0] |
                    (uint64_t)(uint32_t)(n_ids == 2 ? ids[1] : -1) << 32;
        }
        cache_slot *slot = free_slot(sh->slots, atomic_load_explicit(&sh->n_slots,
                                                                     memory_order_relaxed), tag);
        atomic_store_explicit(&slot->head, k->head, memory_order_relaxed);
        atomic_store_explicit(&slot->tail, k->tail, memory_order_relaxed);
        atomic_store_explicit(&slot->value, value, memory_order_relaxed);
        atomic_store_explicit(&slot->tag, tag, memory_order_release);
        sh->n_entries++;
    }
    shard_unlock(sh);
}

void unit_cache_tally(bpe_unit_cache *c, int64_t lookups, int64_t hits) {
    atomic_fetch_add_explicit(&c->lookups, lookups, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->hits, hits, memory_order_relaxed);
}

void bpe_unit_cache_stats(bpe_unit_cache *c, int64_t *entries, int64_t *bytes, int64_t *lookups,
                          int64_t *hits) {
    int64_t n = 0, used = 0;
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) {
        cache_shard *sh = &c->shard[i];
        if (!shard_lock(sh)) continue; /* busy: left out of this reading */
        if (atomic_load_explicit(&sh->n_slots, memory_order_relaxed)) {
            n += sh->n_entries;
            used += (int64_t)atomic_load_explicit(&sh->n_slots, memory_order_relaxed) *
                        (int64_t)sizeof(cache_slot) + sh->arena_used;
        }
        shard_unlock(sh);
    }
    *entries = n;
    *bytes = used;
    *lookups = atomic_load_explicit(&c->lookups, memory_order_relaxed);
    *hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
}
