/* merge_ids.c - the ids of merges that tokenizer files give by their tokens' bytes.
 *
 * A 200 000-token vocabulary's merges name 600 000 tokens; looking each up in a Python dict
 * misses the cache on nearly every one (~0.25 s). Here the vocabulary goes into a word table
 * once and the merges' parts are looked up in batches whose slots are prefetched ahead. */
#include <stdlib.h>

#include "bpe.h"
#include "word_table.h"

/* Adds each of n keys (key i is bytes[at[i] .. at[i + 1])) to t, its number to seq[i]. */
static int add_all(word_table *t, const uint8_t *bytes, const int64_t *at, int64_t n,
                   int32_t *seq) {
    word_batch b = {.n = 0};
    for (int64_t i = 0; i < n; i++) {
        int64_t len = at[i + 1] - at[i];
        int rc = word_batch_push(t, &b, word_key_of(bytes + at[i], len, len), 0, seq + i);
        if (rc != BPE_OK) return rc;
    }
    return word_batch_flush(t, &b);
}

static int offsets_ok(const int64_t *at, int64_t n) {
    if (at[0] != 0) return 0;
    for (int64_t i = 0; i < n; i++)
        if (at[i + 1] < at[i] || at[i + 1] - at[i] > INT32_MAX) return 0;
    return 1;
}

int bpe_merge_ids(const uint8_t *vocab, const int64_t *vocab_at, const int32_t *vocab_id,
                  int64_t n_vocab, const uint8_t *parts, const int64_t *parts_at,
                  int64_t n_merges, int32_t *left, int32_t *right, int32_t *merged,
                  int64_t *bad) {
    if (!vocab_at || !parts_at || !bad || n_vocab < 0 || n_merges < 0 ||
        n_vocab >= INT32_MAX || n_merges >= INT32_MAX / 3)
        return BPE_EINVAL;
    if ((n_vocab > 0 && (!vocab || !vocab_id)) ||
        (n_merges > 0 && (!parts || !left || !right || !merged)))
        return BPE_EINVAL;
    if (!offsets_ok(vocab_at, n_vocab) || !offsets_ok(parts_at, 2 * n_merges)) return BPE_EINVAL;
    *bad = -1;
    word_table t;
    int rc = word_table_init(&t, n_vocab);
    int32_t *seq = malloc((size_t)(n_vocab + 3 * n_merges) * sizeof *seq + 1);
    int32_t *id_of = malloc((size_t)n_vocab * sizeof *id_of + 1); /* by seq */
    if (!seq || !id_of) rc = BPE_ENOMEM;
    if (rc == BPE_OK) rc = add_all(&t, vocab, vocab_at, n_vocab, seq);
    int64_t n_known = t.n; /* a part numbered from here on is in no token */
    for (int64_t i = 0; rc == BPE_OK && i < n_known; i++) id_of[i] = INT32_MAX;
    for (int64_t i = 0; rc == BPE_OK && i < n_vocab; i++) /* bytes listed twice: lowest id */
        if (vocab_id[i] < id_of[seq[i]]) id_of[seq[i]] = vocab_id[i];

    /* The parts of merge r lie side by side: left, right, and both together for the merged. */
    int32_t *part_seq = seq + n_vocab;
    word_batch b = {.n = 0};
    for (int64_t r = 0; rc == BPE_OK && r < n_merges; r++) {
        const int64_t *at = parts_at + 2 * r;
        rc = word_batch_push(&t, &b, word_key_of(parts + at[0], at[1] - at[0], at[1] - at[0]),
                             0, part_seq + 3 * r);
        if (rc == BPE_OK)
            rc = word_batch_push(&t, &b,
                                 word_key_of(parts + at[1], at[2] - at[1], at[2] - at[1]), 0,
                                 part_seq + 3 * r + 1);
        if (rc == BPE_OK)
            rc = word_batch_push(&t, &b,
                                 word_key_of(parts + at[0], at[2] - at[0], at[2] - at[0]), 0,
                                 part_seq + 3 * r + 2);
    }
    if (rc == BPE_OK) rc = word_batch_flush(&t, &b);
    for (int64_t k = 0; rc == BPE_OK && k < 3 * n_merges; k++) {
        if (part_seq[k] >= n_known) {
            *bad = k; /* merge k / 3; its left, right or merged token for k % 3 */
            rc = BPE_EINVAL;
        } else {
            int32_t *out = k % 3 == 0 ? left : k % 3 == 1 ? right : merged;
            out[k / 3] = id_of[part_seq[k]];
        }
    }
    word_table_free(&t);
    free(seq), free(id_of);
    return rc;
}
