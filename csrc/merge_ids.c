/* merge_ids.c - the ids of merges that tokenizer files give by their tokens' bytes.
 *
 * A 200 000-token vocabulary's merges name 600 000 tokens; looking each up in a Python dict
 * misses the cache on nearly every one (~0.25 s). Here the vocabulary goes into a word table
 * once and the merges' parts are looked up with their slots prefetched a few lookups ahead. */
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

/* The key of part k of the merges: merge k / 3's left (k % 3 == 0), right (1) or both (2). */
static word_key part_key(const uint8_t *parts, const int64_t *parts_at, int64_t k) {
    const int64_t *at = parts_at + 2 * (k / 3);
    int64_t from = k % 3 == 1 ? at[1] : at[0], to = k % 3 == 0 ? at[1] : at[2];
    return word_key_of(parts + from, to - from, to - from);
}

/* How far ahead of its lookup a part's slot is prefetched. */
#define LOOKAHEAD 16

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
    int32_t *seq = malloc((size_t)n_vocab * sizeof *seq + 1);
    if (!seq) rc = BPE_ENOMEM;
    if (rc == BPE_OK) rc = add_all(&t, vocab, vocab_at, n_vocab, seq);
    /* Each token's count becomes its id; bytes listed twice keep the lowest. */
    for (int64_t i = 0; rc == BPE_OK && i < n_vocab; i++)
        t.slots[t.slot_of[seq[i]]].count = INT32_MAX;
    for (int64_t i = 0; rc == BPE_OK && i < n_vocab; i++) {
        word_slot *slot = &t.slots[t.slot_of[seq[i]]];
        if (vocab_id[i] < slot->count) slot->count = vocab_id[i];
    }
    free(seq);

    /* Only looked up, never added: parts that are in no token stop the search at the first. */
    word_key ahead[LOOKAHEAD];
    int64_t n_parts = 3 * n_merges;
    for (int64_t k = 0; rc == BPE_OK && k < LOOKAHEAD && k < n_parts; k++) {
        ahead[k] = part_key(parts, parts_at, k);
        word_table_prefetch(&t, ahead[k].hash);
    }
    for (int64_t k = 0; rc == BPE_OK && k < n_parts; k++) {
        word_key key = ahead[k % LOOKAHEAD];
        if (k + LOOKAHEAD < n_parts) {
            ahead[k % LOOKAHEAD] = part_key(parts, parts_at, k + LOOKAHEAD);
            word_table_prefetch(&t, ahead[k % LOOKAHEAD].hash);
        }
        int64_t id;
        if (!word_table_find(&t, &key, &id)) {
            *bad = k;
            rc = BPE_EINVAL;
        } else {
            int32_t *out = k % 3 == 0 ? left : k % 3 == 1 ? right : merged;
            out[k / 3] = (int32_t)id;
        }
    }
    word_table_free(&t);
    return rc;
}
