/* word_table.h - byte strings -> (sequence number, count), for counting units and pre-tokens.
 *
 * Open addressing over slots that hold all a lookup needs (count, length, and the key's first
 * sixteen bytes: all of a key of up to 16 bytes), so a hit on a key of up to 16 bytes,
 * 94% of the units of real text, touches one cache line. The hash is kept outside the slots,
 * in seq order, for growing the table: the slots' bytes do better as key bytes.
 * Keys are also kept back to back in an arena in insertion order, and words are numbered in
 * that order ("seq"): iteration and export follow it, so every result built on a table depends
 * only on the input, never on hashing. */
#ifndef WORD_TABLE_H
#define WORD_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bpe.h"

typedef struct {
    uint64_t head, tail; /* word_key's: the key's first sixteen bytes */
    int64_t count;
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
    uint64_t *hash;   /* hash[seq]: word_table_hash of key seq */
    int64_t n, cap;
} word_table;

/* most: the most words the caller can add, when it knows (a bound, not a reservation), or 0. */
int word_table_init(word_table *t, int64_t most);
/* Makes room for about n words in all, so that filling the table neither rehashes it nor
 * moves its per-word arrays. */
int word_table_reserve(word_table *t, int64_t n);
/* Words are added in two steps, key then insert, so that a caller adding many can hash a
 * batch ahead and ask for their slots early (lookups in a large table miss the cache; this
 * overlaps the misses). The key is computed inline because it runs once per unit of a corpus. */
static inline uint64_t word_table_load64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* Whether a[0 .. n) and b[0 .. n) hold the same bytes, for the part of a key past its first
 * sixteen (n > 0), a few words long as a rule: eight bytes at a time, the last word
 * overlapping the one before it, inline where a call to memcmp cost more than the compare. */
static inline int word_table_same_bytes(const uint8_t *a, const uint8_t *b, int64_t n) {
    if (n >= 8) {
        for (int64_t i = 0; i + 8 < n; i += 8)
            if (word_table_load64(a + i) != word_table_load64(b + i)) return 0;
        return word_table_load64(a + n - 8) == word_table_load64(b + n - 8);
    }
    for (int64_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

/* A word as the table sees it: its first sixteen bytes zero-padded (head, tail; with the
 * length, the whole key when it is no longer) and its hash. */
typedef struct {
    const uint8_t *ptr;
    int64_t len;
    uint64_t head, tail, hash;
} word_key;

static inline uint64_t word_table_mix(uint64_t h, uint64_t block) {
    h = (h ^ block) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* The key of w[0..len), when `avail` >= len bytes from w may be read. Word lengths vary at
 * random, so branches on them mispredict: with sixteen bytes readable, two loads and two masks
 * do it for every length; near the end of a buffer the bytes are copied instead. */
static inline word_key word_key_of(const uint8_t *w, int64_t len, int64_t avail) {
    word_key k = {w, len, 0, 0, 0};
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (avail >= 16) {
        /* keep[n]: the first n bytes of a little-endian load */
        static const uint64_t keep[9] = {0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFull,
                                         0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFull, ~0ull};
        k.head = word_table_load64(w) & keep[len < 8 ? len : 8];
        k.tail = word_table_load64(w + 8) & keep[len < 8 ? 0 : len < 16 ? len - 8 : 8];
    } else
#endif
    {
        uint8_t buf[16] = {0};
        memcpy(buf, w, (size_t)(len < 16 ? len : 16));
        k.head = word_table_load64(buf);
        k.tail = word_table_load64(buf + 8);
    }
    (void)avail;
    uint64_t h = word_table_mix(word_table_mix(0x9E3779B97F4A7C15ull ^ (uint64_t)len, k.head),
                                k.tail);
    if (len > 16) { /* the rest eight bytes at a time, the last block ending the key */
        int64_t i = 16;
        for (; i + 8 < len; i += 8) h = word_table_mix(h, word_table_load64(w + i));
        h = word_table_mix(h, word_table_load64(w + len - 8));
    }
    h *= 0xc4ceb9fe1a85ec53ull;
    k.hash = h ^ (h >> 29);
    return k;
}

static inline uint64_t word_table_hash(const uint8_t *w, int64_t len) {
    return word_key_of(w, len, len).hash;
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
static inline const uint8_t *word_table_key(const word_table *t, int64_t seq, int64_t *len) {
    *len = t->start[seq + 1] - t->start[seq];
    return t->arena + t->start[seq];
}
/* Words waiting to be added to a table, hashed and their slots prefetched ahead of the
 * insert: lookups in a large table miss the cache, and a batch overlaps the misses. */
#define WORD_BATCH 32

typedef struct {
    word_key key[WORD_BATCH];
    int64_t count[WORD_BATCH];
    int32_t *seq_out[WORD_BATCH];
    int n;
} word_batch;

/* Adds the queued words to t and empties the batch. */
int word_batch_flush(word_table *t, word_batch *b);

/* Queues adding count to the word k (from word_key_of), inserting it if new; the word's
 * number is written to *seq_out (if not NULL) when the batch is flushed, so seq_out must stay
 * valid until then. The batch flushes itself when full; call word_batch_flush at the end. */
static inline int word_batch_push(word_table *t, word_batch *b, word_key k, int64_t count,
                                  int32_t *seq_out) {
    if (b->n == WORD_BATCH) {
        int rc = word_batch_flush(t, b);
        if (rc != BPE_OK) return rc;
    }
    b->key[b->n] = k;
    b->count[b->n] = count;
    b->seq_out[b->n] = seq_out;
    word_table_prefetch(t, k.hash);
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
/* Looks up the word k (from word_key_of) without adding it: 1 and its count in *count if the
 * table holds it, else 0. Only reads the table. */
int word_table_find(const word_table *t, const word_key *k, int64_t *count);
static inline int64_t word_table_count(const word_table *t, int64_t seq) {
    return t->slots[t->slot_of[seq]].count;
}
void word_table_free(word_table *t);

#endif
