/* word_table.h - byte strings -> (sequence number, count), for counting units and pre-tokens.
 *
 * Open addressing over slots that hold all a lookup needs (hash, count, length and the first
 * eight bytes of the key), so a hit on a short key, the common case, touches one cache line.
 * Keys are also kept back to back in an arena in insertion order, and words are numbered in
 * that order ("seq"): iteration and export follow it, so every result built on a table depends
 * only on the input, never on hashing. */
#ifndef WORD_TABLE_H
#define WORD_TABLE_H

#include <stdint.h>

typedef struct {
    uint64_t hash;
    int64_t count;
    uint64_t prefix; /* the key's first (up to) 8 bytes, zero padded */
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
/* Adds count to word w[0..len), inserting it if new; *seq gets its number (may be NULL). */
int word_table_add(word_table *t, const uint8_t *w, int64_t len, int64_t count, int64_t *seq);
/* The same in two steps, so that a caller adding many words can hash a batch ahead and ask
 * for their slots early (lookups in a large table miss the cache; this overlaps the misses). */
uint64_t word_table_hash(const uint8_t *w, int64_t len);
void word_table_prefetch(const word_table *t, uint64_t hash);
int word_table_add_hashed(word_table *t, const uint8_t *w, int64_t len, uint64_t hash,
                          int64_t count, int64_t *seq);
static inline const uint8_t *word_table_key(const word_table *t, int64_t seq, int64_t *len) {
    *len = t->start[seq + 1] - t->start[seq];
    return t->arena + t->start[seq];
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
