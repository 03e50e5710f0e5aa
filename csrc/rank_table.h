/* rank_table.h - the encoder's map from a token pair to its merge rank.
 *
 * Built once, then only read, on every step of every word encoded: it has to stay in cache.
 * Slots hold just a rank (4 bytes), and the pair itself is read back from pair[rank] to
 * confirm a match; for 50 000 merges that is 512 KB of slots plus 400 KB of pairs, against
 * 2 MB for slots holding key and value. Linear probing, at most half full. */
#ifndef RANK_TABLE_H
#define RANK_TABLE_H

#include <stdint.h>

#include "pair_map.h"

typedef struct {
    int32_t *slot;  /* a rank, or -1: free */
    uint64_t *pair; /* pair[rank]: pair_key(left, right) of merge `rank` */
    int64_t mask;   /* number of slots - 1 */
} rank_table;

/* Merge r joins (left[r], right[r]); a pair listed twice keeps its first rank. */
int rank_table_init(rank_table *t, const int32_t *left, const int32_t *right, int64_t n);
void rank_table_free(rank_table *t);

/* The rank of pair (a, b), or -1 if it is not a merge. */
static inline int32_t rank_table_get(const rank_table *t, int32_t a, int32_t b) {
    uint64_t key = pair_key(a, b);
    for (uint64_t i = pair_map_slot_of(key, t->mask + 1);; i = (i + 1) & (uint64_t)t->mask) {
        int32_t r = t->slot[i];
        if (r < 0 || t->pair[r] == key) return r;
    }
}

#endif
