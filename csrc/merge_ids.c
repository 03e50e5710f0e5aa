/* merge_ids.c - the merges that tokenizer files give by their tokens' bytes, as ids.
 *
 * A 200 000-token vocabulary's merges name 600 000 tokens; looking each up in a Python dict
 * misses the cache on nearly every one (~0.25 s). Here the vocabulary goes into a word table
 * once and the merges' parts are looked up with their slots prefetched a few lookups ahead.
 * A rank file (tiktoken's) names no merges at all: every split of a token into two tokens is
 * one (bpe_rank_splits), 1.4 M splits to try for 200 000 tokens. */
#include <stdlib.h>
#include <string.h>

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

/* A word table of the vocabulary whose counts are the tokens' ids (token i is
 * vocab[vocab_at[i] .. vocab_at[i + 1]), id vocab_id[i]; bytes listed twice keep the lowest
 * id). The caller frees it, whatever is returned. */
static int id_table(word_table *t, const uint8_t *vocab, const int64_t *vocab_at,
                    const int32_t *vocab_id, int64_t n_vocab) {
    int rc = word_table_init(t, n_vocab);
    int32_t *seq = malloc((size_t)n_vocab * sizeof *seq + 1);
    if (!seq) rc = BPE_ENOMEM;
    if (rc == BPE_OK) rc = add_all(t, vocab, vocab_at, n_vocab, seq);
    for (int64_t i = 0; rc == BPE_OK && i < n_vocab; i++)
        t->slots[t->slot_of[seq[i]]].count = INT32_MAX;
    for (int64_t i = 0; rc == BPE_OK && i < n_vocab; i++) {
        word_slot *slot = &t->slots[t->slot_of[seq[i]]];
        if (vocab_id[i] < slot->count) slot->count = vocab_id[i];
    }
    free(seq);
    return rc;
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
    int rc = id_table(&t, vocab, vocab_at, vocab_id, n_vocab);

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

/* A cut of token i at k, with its two sides' keys, on its way through the lookahead. */
typedef struct {
    int64_t i, k;
    word_key left, right;
} rank_cut;

/* The cuts worth trying, in token order then cut order: those whose two sides have the
 * lengths of some tokens (has_len[m]: a token has m bytes). Besides sparing lookups, this
 * keeps a long token's cost to the lengths the vocabulary has: each cut hashes its whole
 * token, and a rank file of 256 bytes and one 1 MB token had 10^6 cuts of ~1 MB each. */
typedef struct {
    const int64_t *at;
    int64_t n;
    const uint8_t *has_len;
    int64_t i, k; /* the cut; i == n once there are no more */
} cut_walk;

static void walk_next(cut_walk *w) {
    for (;;) {
        int64_t len = w->at[w->i + 1] - w->at[w->i];
        while (++w->k < len)
            if (w->has_len[w->k] && w->has_len[len - w->k]) return;
        if (++w->i == w->n) return;
        w->k = 0;
    }
}

/* Cut (i, k)'s keys, their slots prefetched. */
static rank_cut cut_keys(const word_table *t, const uint8_t *vocab, const int64_t *vocab_at,
                         int64_t i, int64_t k) {
    const uint8_t *p = vocab + vocab_at[i];
    int64_t len = vocab_at[i + 1] - vocab_at[i];
    rank_cut c = {i, k, word_key_of(p, k, len), word_key_of(p + k, len - k, len - k)};
    word_table_prefetch(t, c.left.hash);
    word_table_prefetch(t, c.right.hash);
    return c;
}

int bpe_rank_splits(const uint8_t *vocab, const int64_t *vocab_at, const int32_t *vocab_id,
                    int64_t n_vocab, int32_t *token, int32_t *left, int32_t *right,
                    int32_t *cut, int64_t room, int64_t *n_found) {
    if (!vocab_at || !n_found || n_vocab < 0 || n_vocab >= INT32_MAX || room < 0 ||
        (n_vocab > 0 && (!vocab || !vocab_id)) ||
        (room > 0 && (!token || !left || !right || !cut)))
        return BPE_EINVAL;
    if (!offsets_ok(vocab_at, n_vocab)) return BPE_EINVAL;
    *n_found = 0;
    if (n_vocab == 0) return BPE_OK;
    int64_t longest = 0;
    for (int64_t i = 0; i < n_vocab; i++)
        if (vocab_at[i + 1] - vocab_at[i] > longest) longest = vocab_at[i + 1] - vocab_at[i];
    uint8_t *has_len = calloc((size_t)longest + 1, 1);
    word_table t;
    int rc = id_table(&t, vocab, vocab_at, vocab_id, n_vocab);
    if (!has_len) rc = BPE_ENOMEM;
    for (int64_t i = 0; rc == BPE_OK && i < n_vocab; i++)
        has_len[vocab_at[i + 1] - vocab_at[i]] = 1;
    /* Every such cut is tried, both sides' slots prefetched LOOKAHEAD cuts ahead: the sides of
     * 200 000 tokens' cuts are scattered over a table of ~10 MB. */
    cut_walk w = {vocab_at, n_vocab, has_len, 0, 0};
    rank_cut ahead[LOOKAHEAD];
    int64_t n_ahead = 0, found = 0;
    if (rc == BPE_OK) walk_next(&w); /* from (0, 0), no cut, to the first */
    for (; rc == BPE_OK && n_ahead < LOOKAHEAD && w.i < n_vocab; n_ahead++) {
        ahead[n_ahead] = cut_keys(&t, vocab, vocab_at, w.i, w.k);
        walk_next(&w);
    }
    for (int64_t j = 0; rc == BPE_OK && j < n_ahead;) {
        rank_cut c = ahead[j % LOOKAHEAD];
        if (w.i < n_vocab) { /* its place takes the next cut */
            ahead[j % LOOKAHEAD] = cut_keys(&t, vocab, vocab_at, w.i, w.k);
            walk_next(&w);
            n_ahead++;
        }
        j++;
        int64_t a, b;
        if (!word_table_find(&t, &c.left, &a) || !word_table_find(&t, &c.right, &b)) continue;
        if (found == room) {
            rc = BPE_EINVAL; /* room is less than the splits found */
            break;
        }
        token[found] = (int32_t)c.i;
        left[found] = (int32_t)a;
        right[found] = (int32_t)b;
        cut[found] = (int32_t)c.k;
        found++;
    }
    word_table_free(&t);
    free(has_len);
    *n_found = found;
    return rc;
}

int bpe_gather_bytes(const uint8_t *src, int64_t n_src, const int64_t *starts,
                     const int64_t *sizes, int64_t n, uint8_t *out, int64_t n_out) {
    if (n < 0 || n_src < 0 || n_out < 0 || (n > 0 && (!starts || !sizes)) ||
        (n_src > 0 && !src) || (n_out > 0 && !out))
        return BPE_EINVAL;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) { /* all checked before anything is written */
        if (starts[i] < 0 || sizes[i] < 0 || starts[i] > n_src - sizes[i] ||
            sizes[i] > n_out - at)
            return BPE_EINVAL;
        at += sizes[i];
    }
    at = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy(out + at, src + starts[i], (size_t)sizes[i]);
        at += sizes[i];
    }
    return BPE_OK;
}
