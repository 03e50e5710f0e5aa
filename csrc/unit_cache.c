/* unit_cache.c - see unit_cache.h.
 *
 * A unit's shard is picked by the top bits of its hash and its slot by the bits above the
 * low 24, so the two are independent. A shard is a table of 32-byte slots (open
 * addressing, linear probing, at most half full while it can still double, three quarters
 * once it has reached its bound) and an arena. A slot holds all a lookup of a unit of up to
 * 16 bytes and up to four ids needs (most units of real text): its hash, its key, its ids; a
 * longer entry keeps its ids and the rest of its key in the arena.
 *
 * Reads take no lock, so that a lookup of a unit, made once per unit of the input, costs
 * loads only. Writers take the shard's lock (only tried, as unit_cache.h says) and:
 * - add an entry by filling a free slot and then publishing its tag (release), so a reader
 *   that sees the tag sees the rest;
 * - move or clear slots (the table doubled, or a full shard emptied when the units it lacks
 *   keep coming back) with the shard's version odd, and bump it again when done. A reader
 *   notes the version before and after its lookup: if it changed, what it read is thrown
 *   away and the unit counts as a miss (a seqlock).
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
/* A shard's small region (unit_cache.h): 2 048 slots and 32 KB of arena, 6 MB for all 64, on
 * ordinary pages. The first 4 MB of realmix hold 28 000 distinct units, ~440 a shard: they
 * stay there; realmix's 456 000 outgrow it. (With 512 slots, that 4 MB text's first encode
 * grew the process by 42 MB, against 10.) */
#define SMALL_SHARD_BYTES (96 << 10)
/* A full shard keeps what it holds and drops what it misses, until it has missed units it
 * missed before as many times as a quarter of its entries; then it is emptied and fills
 * again. Most of what fills a cache to its bound is units met once (misspellings, numbers,
 * names): emptying a full shard at once, for them, also threw out the units that recur, which
 * then missed again (a 150 MB stream with a 64 MB cache: 1.00 M misses against 0.59 M, of
 * 0.57 M distinct units). Units that miss again and again are text the cache should now hold
 * (another language, texts cut otherwise): missed_before tells them from units met once. */
#define RECURRING_SHARE 4

/* A shard's bytes split between slots and arena: three quarters of them slots, as many as
 * fit in a power of two (0 if not even FIRST_SLOTS fit), the rest arena. Most entries live
 * in their slot alone (two 32-byte slots each at half load, fewer once the shard is at its
 * bound); the arena holds the longer ones. */
static void split_shard(int64_t bytes, uint32_t *n_slots, uint32_t *arena) {
    uint32_t n = FIRST_SLOTS;
    *n_slots = *arena = 0;
    if ((int64_t)n * (int64_t)sizeof(cache_slot) > bytes / 4 * 3) return;
    while ((int64_t)n * 2 * (int64_t)sizeof(cache_slot) <= bytes / 4 * 3) n *= 2;
    *n_slots = n;
    /* whole words, so that every shard's arena starts on one */
    *arena = (uint32_t)(bytes - (int64_t)n * (int64_t)sizeof(cache_slot)) / 4 * 4;
}

/* One block for the small regions, then the large ones (large bytes each, 0: none), each
 * shard's at its own offset; the large part on huge pages (big_alloc.h). NULL if that fails. */
static uint8_t *shard_block(size_t small, size_t large, uint8_t **large_part) {
    size_t small_part = (size_t)UNIT_CACHE_SHARDS * small, total = small_part;
    if (large) { /* the large part starts on a huge page's boundary, and so does the end */
        small_part = (small_part + BIG_ALLOC_PAGE - 1) / BIG_ALLOC_PAGE * BIG_ALLOC_PAGE;
        total = small_part + (size_t)UNIT_CACHE_SHARDS * large;
        total = (total + BIG_ALLOC_PAGE - 1) / BIG_ALLOC_PAGE * BIG_ALLOC_PAGE;
    }
    uint8_t *block = large ? aligned_alloc(BIG_ALLOC_PAGE, total) : malloc(total ? total : 1);
    if (block && large) { /* (where huge pages are always on, the small part asks for none) */
        big_advise_against(block, small_part);
        big_advise(block + small_part, total - small_part);
    }
    *large_part = block ? block + small_part : NULL;
    return block;
}

int bpe_unit_cache_new(int64_t max_bytes, int64_t n_ids, bpe_unit_cache **out) {
    if (!out || max_bytes < 0 || n_ids < 0) return BPE_EINVAL;
    *out = NULL;
    bpe_unit_cache *c = aligned_alloc(64, sizeof *c);
    if (!c) return BPE_ENOMEM;
    memset(c, 0, sizeof *c);
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) {
        atomic_flag_clear(&c->shard[i].busy);
        atomic_init(&c->shard[i].version, 0);
        atomic_init(&c->shard[i].n_slots, 0);
        atomic_init(&c->shard[i].slots, NULL);
        atomic_init(&c->shard[i].arena, NULL);
    }
    atomic_init(&c->lookups, 0);
    atomic_init(&c->hits, 0);
    c->id_bits = n_ids <= (int64_t)1 << 16 ? 16 : n_ids <= (int64_t)1 << 21 ? 21 : 32;
    c->inline_ids = 64 / c->id_bits;
    c->id_mask = ((uint64_t)1 << c->id_bits) - 1;
    /* Offsets are 32-bit, so a shard stays under 4 GB. */
    int64_t per_shard = max_bytes / UNIT_CACHE_SHARDS;
    if (per_shard > ((int64_t)1 << 31)) per_shard = (int64_t)1 << 31;
    int64_t small = per_shard < SMALL_SHARD_BYTES ? per_shard : SMALL_SHARD_BYTES;
    split_shard(small, &c->small_slots, &c->small_arena);
    if (!c->small_slots) {
        *out = c; /* too small to keep anything: a cache that always misses */
        return BPE_OK;
    }
    /* The large region's slots as the whole share would have them, its arena what is left
     * once the small region is taken: a moved shard's small region is dead, and taking it
     * from the slots would halve them at some bounds (power-of-two sizes), from the arena
     * costs it 96 KB (the default cache: 416 KB of arena a shard against 512). */
    uint32_t large_slots, whole_arena;
    split_shard(per_shard, &large_slots, &whole_arena);
    int64_t large_arena = ((int64_t)whole_arena - small) / 4 * 4; /* whole words */
    int large = large_slots > c->small_slots && large_arena >= c->small_arena;
    if (!large) /* too small to be worth two regions: the small one takes it all */
        split_shard(per_shard, &c->small_slots, &c->small_arena);
    c->max_slots = large ? large_slots : c->small_slots;
    c->max_arena = large ? (uint32_t)large_arena : c->small_arena;
    uint64_t slot_room = (uint64_t)UNIT_CACHE_SHARDS * (c->small_slots + (uint64_t)c->max_slots);
    if (slot_room > SIZE_MAX / sizeof(cache_slot) / 2 ||
        (uint64_t)UNIT_CACHE_SHARDS * (c->small_arena + (uint64_t)c->max_arena) > SIZE_MAX / 2) {
        bpe_unit_cache_free(c); /* a 32-bit size_t */
        return BPE_ENOMEM;
    }
    /* Nothing is written up front, so the kernel backs only what the shards come to use. */
    uint8_t *large_slot_part, *large_arena_part;
    c->slot_block = shard_block(c->small_slots * sizeof(cache_slot),
                                large ? c->max_slots * sizeof(cache_slot) : 0,
                                &large_slot_part);
    c->arena_block = shard_block(c->small_arena, large ? c->max_arena : 0, &large_arena_part);
    if (!c->slot_block || !c->arena_block) {
        bpe_unit_cache_free(c);
        return BPE_ENOMEM;
    }
    for (int i = 0; i < UNIT_CACHE_SHARDS; i++) {
        cache_shard *sh = &c->shard[i];
        atomic_init(&sh->slots, (cache_slot *)c->slot_block + (size_t)i * c->small_slots);
        atomic_init(&sh->arena,
                    (arena_word *)((uint8_t *)c->arena_block + (size_t)i * c->small_arena));
        sh->arena_room = c->small_arena;
        if (large) {
            sh->large_slots = (cache_slot *)large_slot_part + (size_t)i * c->max_slots;
            sh->large_arena = (arena_word *)(large_arena_part + (size_t)i * c->max_arena);
        }
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

/* Frees slots[0 .. n): their tags, and their values, which missed_before reads in free
 * slots (the block is never cleared as a whole, so that the kernel backs what is used). */
static void free_slots(cache_slot *slots, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        atomic_store_explicit(&slots[i].tag, 0, memory_order_relaxed);
        atomic_store_explicit(&slots[i].value, 0, memory_order_relaxed);
    }
}

static void shard_clear(cache_shard *sh) {
    begin_change(sh);
    free_slots(atomic_load_explicit(&sh->slots, memory_order_relaxed),
               atomic_load_explicit(&sh->n_slots, memory_order_relaxed));
    sh->n_entries = sh->arena_used = 0;
    sh->full = 0;
    sh->recurring = sh->dropped = 0;
    end_change(sh);
}

/* Whether a full shard (under its lock) missed the unit k before. The free slot where k's
 * probe ends keeps the hash of the last unit that missed there: a free slot's value is never
 * used (a lookup stops at its tag; one that read the slot's tag before the shard was emptied
 * reads the value too, and the seqlock throws it away), and the probe has just brought its
 * line in. Another unit that missed there in between makes k pass for new once more. The
 * store is a release: a reader that reads it then sees the version bumped by the emptying,
 * even when another thread than the one that emptied the shard stores it. */
static int missed_before(cache_shard *sh, const word_key *k) {
    cache_slot *slot = free_slot(atomic_load_explicit(&sh->slots, memory_order_relaxed),
                                 atomic_load_explicit(&sh->n_slots, memory_order_relaxed),
                                 k->hash);
    if (atomic_load_explicit(&slot->value, memory_order_relaxed) == k->hash) return 1;
    atomic_store_explicit(&slot->value, k->hash, memory_order_release);
    return 0;
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

/* Puts the entries of from[0 .. n_from) in again, into `to` of n_to slots, all free. */
static void rehash(cache_slot *to, uint32_t n_to, const cache_slot *from, uint32_t n_from) {
    for (uint32_t i = 0; i < n_from; i++) {
        uint64_t tag = atomic_load_explicit(&from[i].tag, memory_order_relaxed);
        if (tag != 0) copy_slot(free_slot(to, n_to, tag), &from[i]);
    }
}

/* The shard's slots in use doubled (under its lock), its entries put in again: in place
 * while they fit the small region, else moved to the large one. */
static void shard_double(const bpe_unit_cache *c, cache_shard *sh) {
    uint32_t n_old = atomic_load_explicit(&sh->n_slots, memory_order_relaxed), n_slots = 2 * n_old;
    cache_slot *slots = atomic_load_explicit(&sh->slots, memory_order_relaxed);
    if (n_old == c->small_slots) { /* to the large region; the small one stays as it is */
        begin_change(sh);
        free_slots(sh->large_slots, n_slots);
        rehash(sh->large_slots, n_slots, slots, n_old);
        atomic_store_explicit(&sh->slots, sh->large_slots, memory_order_relaxed);
        atomic_store_explicit(&sh->n_slots, n_slots, memory_order_release);
        end_change(sh);
        return;
    }
    cache_slot *old = malloc((size_t)n_old * sizeof *old);
    if (!old) {
        shard_clear(sh); /* no memory to move them: start afresh */
        return;
    }
    begin_change(sh);
    for (uint32_t i = 0; i < n_old; i++) copy_slot(&old[i], &slots[i]);
    free_slots(slots, n_slots);
    rehash(slots, n_slots, old, n_old);
    atomic_store_explicit(&sh->n_slots, n_slots, memory_order_release); /* after the zeroing */
    end_change(sh);
    free(old);
}

/* The shard's arena moved from its small region to its large one (under its lock), at the
 * same offsets; the small one stays as it is for readers that still use it. */
static void shard_grow_arena(const bpe_unit_cache *c, cache_shard *sh) {
    begin_change(sh);
    const arena_word *small = atomic_load_explicit(&sh->arena, memory_order_relaxed);
    for (uint32_t i = 0; i < sh->arena_used / 4; i++)
        atomic_store_explicit(&sh->large_arena[i],
                              atomic_load_explicit(&small[i], memory_order_relaxed),
                              memory_order_relaxed);
    atomic_store_explicit(&sh->arena, sh->large_arena, memory_order_relaxed);
    sh->arena_room = c->max_arena;
    end_change(sh);
}

/* Starts a shard's table when first written (under its lock). */
static void shard_start(cache_shard *sh) {
    if (atomic_load_explicit(&sh->n_slots, memory_order_relaxed) != 0) return;
    free_slots(atomic_load_explicit(&sh->slots, memory_order_relaxed), FIRST_SLOTS);
    atomic_store_explicit(&sh->n_slots, FIRST_SLOTS, memory_order_release);
}

/* The bytes of an entry's arena part (its ids, then its key past the sixteenth byte), or 0
 * for an entry held in its slot alone. */
static int64_t arena_size(const bpe_unit_cache *c, int64_t len, int64_t n_ids) {
    if (unit_cache_is_inline(c, len, n_ids)) return 0;
    int64_t rest = len > UNIT_CACHE_INLINE_KEY ? len - UNIT_CACHE_INLINE_KEY : 0;
    return (4 * n_ids + rest + 3) & ~(int64_t)3; /* entries 4-aligned */
}

/* The ids of an entry held in its slot, packed; 0 if one of them does not fit the packing
 * (a byte without a token, -1: the call that met it fails anyway). */
static int pack_ids(const bpe_unit_cache *c, const int32_t *ids, int64_t n_ids, uint64_t *value) {
    uint64_t packed = 0;
    for (int64_t j = 0; j < n_ids; j++) {
        if (ids[j] < 0 || (uint64_t)ids[j] > c->id_mask) return 0;
        packed |= (uint64_t)ids[j] << (j * c->id_bits);
    }
    *value = packed;
    return 1;
}

void unit_cache_add(bpe_unit_cache *c, const word_key *k, const int32_t *ids, int64_t n_ids) {
    if (!c->max_slots || k->len > UNIT_CACHE_MAX_KEY || n_ids > UNIT_CACHE_MAX_IDS || n_ids < 1 ||
        n_ids > k->len || arena_size(c, k->len, n_ids) > c->max_arena) /* (it would never fit) */
        return;
    uint64_t packed = 0;
    if (unit_cache_is_inline(c, k->len, n_ids) && !pack_ids(c, ids, n_ids, &packed)) return;
    cache_shard *sh = unit_cache_shard(c, k->hash);
    if (!shard_lock(sh)) return;
    /* What the last writer stored under the lock, before this one's stores: so that a reader
     * whose acquire fence follows a store made here also sees the version that writer left
     * (missed_before stores a release for the same reason). */
    atomic_thread_fence(memory_order_release);
    if (sh->full) {
        if (!missed_before(sh, k) || ++sh->recurring < sh->n_entries / RECURRING_SHARE) {
            shard_unlock(sh); /* keeps what it has */
            return;
        }
        shard_clear(sh); /* units it lacks keep coming back: starts afresh */
    }
    shard_start(sh);
    int64_t found;
    int32_t scratch[UNIT_CACHE_MAX_IDS];
    /* Not there yet (another thread may have added it meanwhile). */
    if (!unit_cache_find(c, k, scratch, &found)) {
        uint32_t size = (uint32_t)arena_size(c, k->len, n_ids); /* at most max_arena: see above */
        if (sh->arena_used + size > sh->arena_room && sh->arena_room < c->max_arena)
            shard_grow_arena(c, sh);
        uint32_t n_slots = atomic_load_explicit(&sh->n_slots, memory_order_relaxed);
        if (sh->n_entries + 1 > n_slots / 2 && n_slots < c->max_slots) {
            shard_double(c, sh);
            n_slots = atomic_load_explicit(&sh->n_slots, memory_order_relaxed);
        }
        /* Half full, a shard doubles; at its bound it fills to three quarters, which holds
         * half as many entries again in the same memory (a lookup probes a little further).
         * realmix's lines encoded after realmix as one text missed 130 k units once, then
         * none, against 135-348 k a round for four rounds at half (docs/performance.md). */
        uint32_t most = n_slots < c->max_slots ? n_slots / 2 : n_slots / 4 * 3;
        if (sh->n_entries + 1 > most) {
            sh->full = 1; /* at the bound */
            sh->recurring = 0;
            shard_unlock(sh);
            return;
        }
        if (sh->arena_used + size > sh->arena_room) {
            /* The arena is spent, the slots are not: this entry is dropped, and the shard goes
             * on taking entries held in their slot alone. (Marked full here, a shard that a run
             * of long units had filled refused the short units after them too, and its few
             * entries left missed_before too few free slots to tell units that come back.)
             * It starts afresh once the units it drops come back as a full shard's do, or
             * once it has dropped as many entries as it holds: a stream of long units met
             * once costs the units it held at most one miss each per such round. */
            if (++sh->dropped >= sh->n_entries ||
                (missed_before(sh, k) && ++sh->recurring >= sh->n_entries / RECURRING_SHARE))
                shard_clear(sh);
            shard_unlock(sh);
            return;
        }
        uint64_t tag = unit_cache_tag(k, n_ids), value;
        if (size) {
            arena_word *entry = atomic_load_explicit(&sh->arena, memory_order_relaxed) +
                                sh->arena_used / 4;
            for (int64_t j = 0; j < n_ids; j++)
                atomic_store_explicit(&entry[j], (uint32_t)ids[j], memory_order_relaxed);
            for (int64_t i = UNIT_CACHE_INLINE_KEY; i < k->len; i += 4) /* the key's rest */
                atomic_store_explicit(&entry[n_ids + (i - UNIT_CACHE_INLINE_KEY) / 4],
                                      unit_cache_word(k->ptr + i, k->len - i),
                                      memory_order_relaxed);
            value = sh->arena_used;
            sh->arena_used += size;
        } else {
            value = packed;
        }
        cache_slot *slot = free_slot(atomic_load_explicit(&sh->slots, memory_order_relaxed),
                                     atomic_load_explicit(&sh->n_slots, memory_order_relaxed),
                                     tag);
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
