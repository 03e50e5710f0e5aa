/* count.c - a counter of byte strings: the units and pre-tokens of count_words. */
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
    int rc = word_table_init(&(*out)->table, 0);
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
    /* Sized once for the worst case (no word seen before), not rehashed as it fills. */
    int rc = word_table_reserve(&c->table, c->table.n + n_words);
    word_batch batch = {.n = 0};
    for (int64_t i = 0; i < n_words && rc == BPE_OK; i++) {
        const uint8_t *w = bytes + offsets[i];
        int64_t len = offsets[i + 1] - offsets[i];
        rc = word_batch_push(&c->table, &batch, word_key_of(w, len, n_bytes - offsets[i]),
                             counts[i], NULL);
    }
    return rc == BPE_OK ? word_batch_flush(&c->table, &batch) : rc;
}

int bpe_counter_add_units(bpe_counter *c, const bpe_scanner *s, const uint8_t *text, int64_t n,
                          const int64_t *starts, const int64_t *ends, int64_t n_pieces) {
    if (!c || !s || n < 0 || n_pieces < 0 || (n_pieces > 0 && (!text || !starts || !ends)))
        return BPE_EINVAL;
    if (!pieces_in_bounds(n, starts, ends, n_pieces)) return BPE_EINVAL;
    word_batch batch = {.n = 0};
    int rc = BPE_OK;
    for (int64_t p = 0; p < n_pieces && rc == BPE_OK; p++)
        rc = units_add(&c->table, &batch, s, text + starts[p], ends[p] - starts[p], NULL, NULL);
    return rc == BPE_OK ? word_batch_flush(&c->table, &batch) : rc;
}

int bpe_counter_split_units(const bpe_counter *units, const bpe_scanner *s, bpe_counter *words) {
    /* The same counter twice: its keys would move under the split as it grows. */
    if (!units || !words || !s || units == words) return BPE_EINVAL;
    /* Fewer distinct pre-tokens than units, as a rule: size the table once. */
    int rc = word_table_reserve(&words->table, words->table.n + units->table.n);
    return rc == BPE_OK ? units_split(&units->table, s, &words->table, NULL, NULL) : rc;
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

int bpe_counter_export_split(const bpe_counter *c, uint8_t *bytes, int64_t *counts) {
    const word_table *t = &c->table;
    if (t->n_bytes > 0 && memchr(t->arena, 0xFF, (size_t)t->n_bytes)) return 0;
    for (int64_t s = 0, at = 0; s < t->n; s++) {
        int64_t len;
        const uint8_t *w = word_table_key(t, s, &len);
        if (s > 0) bytes[at++] = 0xFF;
        if (len > 0) memcpy(bytes + at, w, (size_t)len);
        at += len;
        counts[s] = word_table_count(t, s);
    }
    return 1;
}
