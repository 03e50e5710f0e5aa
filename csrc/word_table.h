/* word_table.h - byte strings -> (sequence number, count), for counting units and pre-tokens.
 *
 * Open addressing over slots that hold all a lookup needs (hash, count, length and the key's
 * first eight bytes, all of a shorter key), so a hit on a short key, the common case, touches
 * one cache line.
 * Keys are also kept back to back in an arena in insertion order, and words are numbered in
 * that order ("seq"): iteration and export follow it, so every result built on a table depends
 * only on the input, never on hashing. */
#ifndef WORD_TABLE_H
#define WORD_TABLE_H

#include <stdint.h>
#include <string.h>

#include "bpe.h"

typedef struct {
    uint64_t hash;
    int64_t count;
    uint64_t prefix; /* word_table_prefix of the key */
    int32_t len;
    int32_t seq;     /* insertion number; -1 marks a free slot */
} word_slot;

typedef struct {
    word_slot *slots;
    int64_t n_slots;
    uint8_t *arena; /* keys back to back, in seq order */
    int64_t n_bytes, cap_bytes;
    int64_t *start; /* start[seq]: where key seq begins in the arena; start[n] == n_bytes */
    int64_t *slot_of; /* slot_of[seq]: its slot, for reading its count in seq order */
    int64_t n, cap;
} word_table;

int word_table_init(word_table *t);
/* Makes room for about n words in all, so that filling the table does not rehash it. */
int word_table_reserve(word_table *t, int64_t n);
/* Words are added in two steps, hash then insert, so that a caller adding many can hash a
 * batch ahead and ask for their slots early (lookups in a large table miss the cache; this
 * overlaps the misses). The hash is inline because it runs once per unit of a corpus. */
static inline uint64_t word_table_load64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* The key's first min(len, 8) bytes packed into 64 bits, a different value for each (bytes,
 * len) pair: the slot keeps it, so most comparisons never touch the arena. Short keys are read
 * with two overlapping loads (fixed sizes, so no byte loop and no library call). */
static inline uint64_t word_table_prefix(const uint8_t *p, int64_t len) {
    if (len >= 8) return word_table_load64(p);
    if (len >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + len - 4, 4);
        return (uint64_t)lo | (uint64_t)hi << 32;
    }
    if (len == 0) return 0;
    return (uint64_t)p[0] | (uint64_t)p[len / 2] << 8 | (uint64_t)p[len - 1] << 16;
}

static inline uint64_t word_table_mix(uint64_t h, uint64_t block) {
    h = (h ^ block) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* Eight bytes at a time, the first block being the packed prefix and the last the eight bytes
 * that end the key (they overlap the one before; the length, mixed in first, keeps that
 * unambiguous). */
static inline uint64_t word_table_hash(const uint8_t *p, int64_t len) {
    uint64_t h = word_table_mix(0x9E3779B97F4A7C15ull ^ (uint64_t)len, word_table_prefix(p, len));
    if (len > 8) {
        int64_t i = 8;
        for (; i + 8 < len; i += 8) h = word_table_mix(h, word_table_load64(p + i));
        h = word_table_mix(h, word_table_load64(p + len - 8));
    }
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static inline void word_table_prefetch(const word_table *t, uint64_t hash) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&t->slots[hash & (uint64_t)(t->n_slots - 1)]);
#else
    (void)t, (void)hash;
#endif
}
/* Prefetches the slot of word seq (for walks in seq order). */
static inline void word_table_prefetch_seq(const word_table *t, int64_t seq) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&t->slots[t->slot_of[seq]]);
#else
    (void)t, (void)seq;
#endif
}
/* Adds count to word w[0..len), whose word_table_hash is hash, inserting it if new; *seq gets
 * its number (may be NULL). */
int word_table_add_hashed(word_table *t, const uint8_t *w, int64_t len, uint64_t hash,
                          int64_t count, int64_t *seq);
static inline const uint8_t *word_table_key(const word_table *t, int64_t seq, int64_t *len) {
    *len = t->start[seq + 1] - t->start[seq];
    return t->arena + t->start[seq];
}
/* Words waiting to be added to a table, hashed and their slots prefetched ahead of the
 * insert: lookups in a large table miss the cache, and a batch overlaps the misses. */
#define WORD_BATCH 32

typedef struct {
    const uint8_t *ptr[WORD_BATCH];
    int64_t len[WORD_BATCH], count[WORD_BATCH];
    uint64_t hash[WORD_BATCH];
    int32_t *seq_out[WORD_BATCH];
    int n;
} word_batch;

/* Adds the queued words to t and empties the batch. */
int word_batch_flush(word_table *t, word_batch *b);

/* Queues word_table_add_hashed(t, w, len, hash, count); the word's number is written to
 * *seq_out (if not NULL) when the batch is flushed, so seq_out must stay valid until then.
 * The batch flushes itself when full; call word_batch_flush at the end. */
static inline int word_batch_push(word_table *t, word_batch *b, const uint8_t *w, int64_t len,
                                  uint64_t hash, int64_t count, int32_t *seq_out) {
    if (b->n == WORD_BATCH) {
        int rc = word_batch_flush(t, b);
        if (rc != BPE_OK) return rc;
    }
    b->ptr[b->n] = w;
    b->len[b->n] = len;
    b->count[b->n] = count;
    b->hash[b->n] = hash;
    b->seq_out[b->n] = seq_out;
    word_table_prefetch(t, hash);
    b->n++;
    return BPE_OK;
}

/* Length of the longest key (at least 1): the size of a scratch buffer per key byte. */
static inline int64_t word_table_longest(const word_table *t) {
    int64_t longest = 1;
    for (int64_t s = 0; s < t->n; s++)
        if (t->start[s + 1] - t->start[s] > longest) longest = t->start[s + 1] - t->start[s];
    return longest;
}
static inline int64_t word_table_count(const word_table *t, int64_t seq) {
    return t->slots[t->slot_of[seq]].count;
}
void word_table_free(word_table *t);

#endif
