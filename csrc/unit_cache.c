/* unit_cache.c - see unit_cache.h.
 *
 * A unit's shard is picked by the top bits of its hash and its slot by the low bits, so the
 * two are independent. A shard is a table of slots (open addressing, linear probing, at most
 * half full) and an arena where each entry's ids and key bytes lie back to back. Slots hold
 * the whole hash, so a probe compares key bytes only on a likely match. */
#include "unit_cache.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>


#define UNIT_CACHE_SHARDS 64
#define LOCK_TRIES 64     /* tries of a shard's lock before giving up on it */
#define FIRST_SLOTS 64    /* a shard's slots when first written; doubled up to the bound */
#define FIRST_ARENA 1024  /* and its arena's bytes */

typedef struct {
    uint64_t hash; /* 0: a free slot (a unit's hash of 0 is kept as 1) */
    uint32_t at;   /* the entry's offset in the arena: n_ids ids, then key_len bytes */
    uint16_t key_len, n_ids;
} cache_slot;

/* A shard grows by doubling from its first size to the bound, so a cache that serves small
 * inputs costs memory and page faults for what it holds, not for its bound (a fresh 64 MB
 * cache made the first encode of 9 MB 1.5x slower when all of it was cleared up front). */
typedef struct {
    atomic_flag busy;
    cache_slot *slots; /* n_slots of them, a power of two; NULL until first written */
    uint8_t *arena;
    uint32_t n_slots, arena_cap, n_entries, arena_used;
} cache_shard;

struct bpe_unit_cache {
    cache_shard shard[UNIT_CACHE_SHARDS];
    uint32_t max_slots, max_arena; /* the bound of every shard; max_slots 0: keep nothing */
    _Atomic int64_t lookups, hits;
};

int bpe_unit_cache_new(int64_t max_bytes, bpe_unit_cache **out) {
    if (!out || max_bytes < 0) return BPE_EINVAL;
    *out = NULL;
    bpe_unit_cache *c = calloc(1, sizeof *c);
    if (!c) return BPE_ENOMEM;
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) atomic_flag_clear(&c->shard[i].busy);
    atomic_init(&c->lookups, 0);
    atomic_init(&c->hits, 0);
    /* A shard: half its bytes slots, half arena. An entry of real text takes ~16 bytes of
     * arena (two ids, an 8-byte key) and, at half load, two 16-byte slots: the two halves
     * fill at about the same pace. Offsets are 32-bit, so a shard stays under 4 GB. */
    int64_t per_shard = max_bytes / UNIT_CACHE_SHARDS;
    if (per_shard > ((int64_t)1 << 31)) per_shard = (int64_t)1 << 31;
    uint32_t n_slots = FIRST_SLOTS;
    if ((int64_t)n_slots * (int64_t)sizeof(cache_slot) > per_shard / 2) {
        *out = c; /* too small to keep anything: a cache that always misses */
        return BPE_OK;
    }
    while ((int64_t)n_slots * 2 * (int64_t)sizeof(cache_slot) <= per_shard / 2) n_slots *= 2;
    c->max_slots = n_slots;
    c->max_arena = (uint32_t)(per_shard - (int64_t)n_slots * (int64_t)sizeof(cache_slot));
    if (c->max_arena < FIRST_ARENA) c->max_arena = FIRST_ARENA;
    *out = c;
    return BPE_OK;
}

void bpe_unit_cache_free(bpe_unit_cache *c) {
    if (!c) return;
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) free(c->shard[i].slots), free(c->shard[i].arena);
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

static cache_shard *shard_of(bpe_unit_cache *c, uint64_t hash) {
    return &c->shard[hash >> 58]; /* the top six bits: 64 shards */
}

static uint64_t slot_hash(uint64_t hash) { return hash ? hash : 1; }

/* The slot that holds k in the shard, or the free slot where it would go (under the lock). */
static cache_slot *shard_probe(const cache_shard *sh, const word_key *k, uint64_t h) {
    uint32_t mask = sh->n_slots - 1, i = (uint32_t)h & mask;
    for (;; i = (i + 1) & mask) { /* at most half full: a free slot always ends the probe */
        cache_slot *slot = &sh->slots[i];
        if (slot->hash == 0) return slot;
        if (slot->hash == h && slot->key_len == k->len &&
            memcmp(sh->arena + slot->at + 4 * (size_t)slot->n_ids, k->ptr, (size_t)k->len) == 0)
            return slot;
    }
}

/* Empties a shard, keeping its memory (under its lock). */
static void shard_clear(cache_shard *sh) {
    memset(sh->slots, 0, (size_t)sh->n_slots * sizeof(cache_slot));
    sh->n_entries = sh->arena_used = 0;
}

/* Makes room in the shard for one more entry of `size` bytes (under its lock): its slots or
 * its arena doubled while under the bound, else the shard emptied. 0 if memory ran out
 * (the shard is then as it was, or empty). */
static int shard_make_room(const bpe_unit_cache *c, cache_shard *sh, uint32_t size) {
    if (!sh->slots) {
        sh->slots = calloc(FIRST_SLOTS, sizeof(cache_slot));
        sh->arena = malloc(FIRST_ARENA);
        if (!sh->slots || !sh->arena) {
            free(sh->slots), free(sh->arena);
            sh->slots = NULL, sh->arena = NULL;
            return 0;
        }
        sh->n_slots = FIRST_SLOTS, sh->arena_cap = FIRST_ARENA;
    }
    int full_slots = sh->n_entries + 1 > sh->n_slots / 2;
    int full_arena = sh->arena_used + size > sh->arena_cap;
    if ((full_slots && sh->n_slots >= c->max_slots) ||
        (full_arena && sh->arena_cap >= c->max_arena)) {
        shard_clear(sh); /* at the bound: start afresh */
        return 1;
    }
    if (full_arena) {
        uint32_t cap = sh->arena_cap > c->max_arena / 2 ? c->max_arena : 2 * sh->arena_cap;
        uint8_t *arena = realloc(sh->arena, cap);
        if (!arena) return shard_clear(sh), 1;
        sh->arena = arena, sh->arena_cap = cap;
        /* Grown to the bound, it may still lack room for this entry: start afresh then. */
        if (sh->arena_used + size > sh->arena_cap) return shard_clear(sh), 1;
    }
    if (full_slots) { /* twice the slots, the entries put in again */
        cache_slot *old = sh->slots;
        uint32_t n_old = sh->n_slots;
        cache_slot *slots = calloc(2 * (size_t)n_old, sizeof(cache_slot));
        if (!slots) return shard_clear(sh), 1;
        sh->slots = slots, sh->n_slots = 2 * n_old;
        for (uint32_t i = 0; i < n_old; i++) {
            if (old[i].hash == 0) continue;
            uint32_t j = (uint32_t)old[i].hash & (sh->n_slots - 1);
            while (slots[j].hash != 0) j = (j + 1) & (sh->n_slots - 1);
            slots[j] = old[i];
        }
        free(old);
    }
    return 1;
}

int unit_cache_find(bpe_unit_cache *c, const word_key *k, int32_t *ids, int64_t *n_ids) {
    if (!c->max_slots || k->len > UNIT_CACHE_MAX_KEY) return 0;
    cache_shard *sh = shard_of(c, k->hash);
    if (!shard_lock(sh)) return 0;
    int found = 0;
    if (sh->slots) {
        const cache_slot *slot = shard_probe(sh, k, slot_hash(k->hash));
        if (slot->hash != 0) {
            memcpy(ids, sh->arena + slot->at, 4 * (size_t)slot->n_ids);
            *n_ids = slot->n_ids;
            found = 1;
        }
    }
    shard_unlock(sh);
    return found;
}

void unit_cache_add(bpe_unit_cache *c, const word_key *k, const int32_t *ids, int64_t n_ids) {
    if (!c->max_slots || k->len > UNIT_CACHE_MAX_KEY || n_ids > UNIT_CACHE_MAX_IDS || n_ids < 1)
        return;
    uint32_t size = (uint32_t)(4 * n_ids + k->len + 3) & ~(uint32_t)3; /* entries 4-aligned */
    cache_shard *sh = shard_of(c, k->hash);
    if (!shard_lock(sh)) return;
    uint64_t h = slot_hash(k->hash);
    /* Not there yet (another thread may have added it meanwhile), and room for it. */
    if ((!sh->slots || shard_probe(sh, k, h)->hash == 0) && shard_make_room(c, sh, size)) {
        cache_slot *slot = shard_probe(sh, k, h);
        uint8_t *entry = sh->arena + sh->arena_used;
        memcpy(entry, ids, 4 * (size_t)n_ids);
        memcpy(entry + 4 * n_ids, k->ptr, (size_t)k->len);
        *slot = (cache_slot){h, sh->arena_used, (uint16_t)k->len, (uint16_t)n_ids};
        sh->arena_used += size;
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
        n += sh->n_entries;
        used += (int64_t)sh->n_slots * (int64_t)sizeof(cache_slot) + sh->arena_cap;
        shard_unlock(sh);
    }
    *entries = n;
    *bytes = used;
    *lookups = atomic_load_explicit(&c->lookups, memory_order_relaxed);
    *hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
}
