/* count.c - counting units and pre-tokens in C (the fast path of count_words). */
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "units.h"
#include "word_table.h"

struct bpe_counter {
    word_table table;
};

int bpe_counter_new(bpe_counter **out) {
    if (!out) return BPE_EINVAL;
    *out = calloc(1, sizeof **out);
    if (!*out) return BPE_ENOMEM;
    int rc = word_table_init(&(*out)->table);
    if (rc != BPE_OK) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

void bpe_counter_free(bpe_counter *c) {
    if (!c) return;
    word_table_free(&c->table);
    free(c);
}

int bpe_counter_add(bpe_counter *c, const uint8_t *bytes, int64_t n_bytes,
                    const int64_t *offsets, const int64_t *counts, int64_t n_words) {
    if (!c || !offsets || n_words < 0 || (n_words > 0 && !counts) || offsets[0] != 0)
        return BPE_EINVAL;
    for (int64_t i = 0; i < n_words; i++)
        if (offsets[i + 1] < offsets[i] || counts[i] < 0) return BPE_EINVAL;
    if (offsets[n_words] != n_bytes || (n_bytes > 0 && !bytes)) return BPE_EINVAL;
    for (int64_t i = 0; i < n_words; i++) {
        int rc = word_table_add(&c->table, bytes + offsets[i], offsets[i + 1] - offsets[i],
                                counts[i], NULL);
        if (rc != BPE_OK) return rc;
    }
    return BPE_OK;
}

int bpe_counter_add_units(bpe_counter *c, const uint8_t *text, int64_t n, const int64_t *starts,
                          const int64_t *ends, int64_t n_pieces) {
    if (!c || n < 0 || n_pieces < 0 || (n_pieces > 0 && (!text || !starts || !ends)))
        return BPE_EINVAL;
    if (!pieces_in_bounds(n, starts, ends, n_pieces)) return BPE_EINVAL;
    for (int64_t p = 0; p < n_pieces; p++) {
        int rc = units_add(&c->table, text + starts[p], ends[p] - starts[p], NULL, NULL);
        if (rc != BPE_OK) return rc;
    }
    return BPE_OK;
}

/* Pre-tokens waiting to be added to a table, hashed and prefetched ahead of the insert. */
#define SPLIT_BATCH 32

typedef struct {
    const uint8_t *ptr[SPLIT_BATCH];
    int64_t len[SPLIT_BATCH], count[SPLIT_BATCH];
    uint64_t hash[SPLIT_BATCH];
    int n;
} pending_words;

static int flush(word_table *t, pending_words *b) {
    for (int j = 0; j < b->n; j++) {
        int rc = word_table_add_hashed(t, b->ptr[j], b->len[j], b->hash[j], b->count[j], NULL);
        if (rc != BPE_OK) return rc;
    }
    b->n = 0;
    return BPE_OK;
}

int bpe_counter_split_units(const bpe_counter *units, const uint8_t *classes,
                            int64_t n_classes, bpe_counter *words) {
    if (!units || !words || !classes || n_classes != N_CODE_POINTS) return BPE_EINVAL;
    const word_table *t = &units->table;
    int64_t *ends = malloc((size_t)word_table_longest(t) * sizeof *ends);
    if (!ends) return BPE_ENOMEM;
    pending_words batch;
    batch.n = 0;
    /* Fewer distinct pre-tokens than units, as a rule: size the table once. */
    int rc = word_table_reserve(&words->table, words->table.n + t->n);
    /* Insertion order: frequent units come early, so frequent pre-tokens do too, and the
     * trainer lays words out in this order, where packing the hot ones together pays. */
    for (int64_t seq = 0; seq < t->n && rc == BPE_OK; seq++) {
        const word_slot *u = &t->slots[t->slot_of[seq]];
        const uint8_t *p = t->arena + t->start[seq];
        int64_t k = gpt2_split(p, u->len, classes, ends);
        for (int64_t j = 0, from = 0; j < k && rc == BPE_OK; from = ends[j++]) {
            if (batch.n == SPLIT_BATCH) rc = flush(&words->table, &batch);
            batch.ptr[batch.n] = p + from;
            batch.len[batch.n] = ends[j] - from;
            batch.count[batch.n] = u->count;
            batch.hash[batch.n] = word_table_hash(p + from, ends[j] - from);
            word_table_prefetch(&words->table, batch.hash[batch.n]);
            batch.n++;
        }
    }
    if (rc == BPE_OK) rc = flush(&words->table, &batch);
    free(ends);
    return rc;
}

void bpe_counter_size(const bpe_counter *c, int64_t *n_words, int64_t *n_bytes) {
    *n_words = c->table.n;
    *n_bytes = c->table.n_bytes;
}

void bpe_counter_export(const bpe_counter *c, uint8_t *bytes, int64_t *offsets, int64_t *counts) {
    const word_table *t = &c->table;
    if (t->n_bytes > 0) memcpy(bytes, t->arena, (size_t)t->n_bytes);
    for (int64_t s = 0; s <= t->n; s++) offsets[s] = t->start[s]; /* arena is in seq order */
    for (int64_t s = 0; s < t->n; s++) counts[s] = word_table_count(t, s);
}
