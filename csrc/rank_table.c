/* rank_table.c - see rank_table.h. */
#include "rank_table.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"

int rank_table_init(rank_table *t, const int32_t *left, const int32_t *right, int64_t n) {
    memset(t, 0, sizeof *t);
    int64_t n_slots = 64;
    while (n_slots < 2 * n) {
        if (n_slots > INT64_MAX / 4) return BPE_EOVERFLOW;
        n_slots *= 2;
    }
    if ((uint64_t)n_slots > SIZE_MAX / sizeof *t->slot) return BPE_EOVERFLOW;
    int rc = bit_filter_init(&t->merges, n);
    if (rc != BPE_OK) return rc;
    t->slot = malloc((size_t)n_slots * sizeof *t->slot);
    t->pair = malloc((size_t)n * sizeof *t->pair + 1);
    if (!t->slot || !t->pair) {
        rank_table_free(t);
        return BPE_ENOMEM;
    }
    t->mask = n_slots - 1;
    for (int64_t i = 0; i < n_slots; i++) t->slot[i] = -1;
    for (int64_t r = 0; r < n; r++) {
        uint64_t key = pair_key(left[r], right[r]);
        t->pair[r] = key;
        bit_filter_add(&t->merges, rank_filter_hash(key));
        uint64_t i = pair_map_slot_of(key, n_slots);
        while (t->slot[i] >= 0 && t->pair[t->slot[i]] != key) i = (i + 1) & (uint64_t)t->mask;
        t->slot[i] = (int32_t)r; /* a merge listed twice takes its last rank, as in tokenizers */
    }
    return BPE_OK;
}

void rank_table_free(rank_table *t) {
    free(t->slot);
    free(t->pair);
    bit_filter_free(&t->merges);
    memset(t, 0, sizeof *t);
}
