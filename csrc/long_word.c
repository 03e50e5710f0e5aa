/* long_word.c - BPE of a word longer than SHORT_WORD bytes (encoder.h), in 8 bytes a byte.
 *
 * The rule is the short path's: merge the pair of lowest rank, the leftmost among equals,
 * until no pair has a rank. A word of n bytes is n positions, and a position that starts a
 * token holds that token; memory is what bounds the length of a word, so nothing is kept
 * that the positions can give:
 *
 * - tok (the caller's ids, room for n): tok[s] is the token starting at byte s. A token of
 *   L >= 2 bytes also writes the marker -(L + 1) at its second and its last byte, so the
 *   token after s starts at s + L and the one before s ends at s - 1, where a marker gives
 *   its length. A byte without a token holds -1, which no marker equals (markers are <= -3);
 *   what lies between the markers is never read.
 * - rank[s]: the rank of the pair (token at s, token after it), NO_RANK if s starts no token,
 *   is the last or its pair has no rank.
 * - min: a tournament tree over blocks of BLOCK positions; each node holds the lowest rank
 *   below it. The pair to merge is found by walking down from the root, left on ties, then
 *   along the block; a merge changes the ranks of at most three positions, and only the
 *   nodes above their blocks whose minimum changed are rewritten.
 *
 * So a word takes 4n bytes of ranks beside its ids and 1/16 to 1/8 of that for the tree (its
 * leaves a power of two), where a heap of (rank, position) with 32-bit links took 8n of links
 * plus 8-24n of heap. Each merge is O(log n). Words of INT32_MAX (2**31 - 1) bytes or more
 * are refused with BPE_EOVERFLOW. */
#include <stdint.h>
#include <stdlib.h>

#include "encoder.h"

/* Positions a leaf of the tree covers: 128 bytes of ranks, two cache lines, scanned whole
 * when one of them changes. */
#define BLOCK 32

typedef struct {
    int32_t *tok;   /* the caller's ids */
    int32_t *rank;  /* n */
    int32_t *min;   /* 2 * leaves; min[1] is the root, leaf b is min[leaves + b] */
    int64_t n, leaves;
} long_word;

/* ---- tokens at their positions ---- */

static int32_t token_length(const long_word *w, int64_t s) {
    int32_t mark = s + 1 < w->n ? w->tok[s + 1] : 0;
    return mark <= -3 ? -mark - 1 : 1;
}

static int64_t previous_start(const long_word *w, int64_t s) {
    int32_t mark = w->tok[s - 1];
    return mark <= -3 ? s + mark + 1 : s - 1; /* s - L */
}

static void put_token(long_word *w, int64_t s, int64_t len, int32_t id) {
    w->tok[s] = id;
    if (len >= 2) w->tok[s + 1] = w->tok[s + len - 1] = (int32_t)-(len + 1);
}

/* ---- the tournament tree ---- */

static int32_t lower(int32_t a, int32_t b) {
    return a < b ? a : b;
}

static int32_t block_min(const long_word *w, int64_t b) {
    int64_t from = b * BLOCK, to = from + BLOCK < w->n ? from + BLOCK : w->n;
    int32_t m = NO_RANK;
    for (int64_t i = from; i < to; i++) m = lower(m, w->rank[i]);
    return m;
}

/* After ranks in block b changed: its leaf and the nodes above it, up to the first that
 * keeps its value. */
static void refresh_block(long_word *w, int64_t b) {
    int64_t i = w->leaves + b;
    int32_t m = block_min(w, b);
    if (w->min[i] == m) return;
    w->min[i] = m;
    for (i /= 2; i >= 1; i /= 2) {
        m = lower(w->min[2 * i], w->min[2 * i + 1]);
        if (w->min[i] == m) return;
        w->min[i] = m;
    }
}

/* The leftmost position holding the lowest rank, which is min[1] (not NO_RANK). */
static int64_t leftmost_lowest(const long_word *w) {
    int32_t m = w->min[1];
    int64_t i = 1;
    while (i < w->leaves) i = w->min[2 * i] == m ? 2 * i : 2 * i + 1;
    int64_t s = (i - w->leaves) * BLOCK;
    while (w->rank[s] != m) s++;
    return s;
}

/* ---- merging ---- */

static int32_t rank_after(const bpe_encoder *e, const long_word *w, int64_t s) {
    int64_t t = s + token_length(w, s);
    return t < w->n ? encoder_rank(e, w->tok[s], w->tok[t]) : NO_RANK;
}

/* Merges the token at s with the one after it and rewrites the ranks around them. */
static void merge_at(const bpe_encoder *e, long_word *w, int64_t s) {
    int64_t t = s + token_length(w, s), end = t + token_length(w, t);
    put_token(w, s, end - s, e->merged[w->rank[s]]);
    w->rank[t] = NO_RANK;
    w->rank[s] = rank_after(e, w, s);
    int64_t before = s > 0 ? previous_start(w, s) : -1;
    if (before >= 0) w->rank[before] = rank_after(e, w, before);
    refresh_block(w, s / BLOCK);
    if (t / BLOCK != s / BLOCK) refresh_block(w, t / BLOCK);
    if (before >= 0 && before / BLOCK != s / BLOCK) refresh_block(w, before / BLOCK);
}

int encode_long_word(const bpe_encoder *e, const uint8_t *bytes, int64_t n, int32_t *ids,
                     int64_t *n_ids) {
    *n_ids = 0; /* also on failure: callers add it up */
    if (n >= INT32_MAX) return BPE_EOVERFLOW;
    long_word w = {ids, NULL, NULL, n, 1};
    while (w.leaves * BLOCK < n) w.leaves *= 2;
    w.rank = malloc((size_t)n * sizeof *w.rank);
    w.min = malloc((size_t)(2 * w.leaves) * sizeof *w.min);
    if (!w.rank || !w.min) {
        free(w.rank), free(w.min);
        return BPE_ENOMEM;
    }
    for (int64_t i = 0; i < n; i++) {
        ids[i] = e->byte_ids[bytes[i]];
        w.rank[i] = i + 1 < n ? e->byte_pair_rank[bytes[i] << 8 | bytes[i + 1]] : NO_RANK;
    }
    for (int64_t b = 0; b < w.leaves; b++)
        w.min[w.leaves + b] = b * BLOCK < n ? block_min(&w, b) : NO_RANK;
    for (int64_t i = w.leaves - 1; i >= 1; i--) w.min[i] = lower(w.min[2 * i], w.min[2 * i + 1]);

    while (w.min[1] != NO_RANK) merge_at(e, &w, leftmost_lowest(&w));

    /* The tokens, moved to the front in order: each is read before anything is written at
     * or after it, since k <= s. */
    int64_t k = 0;
    for (int64_t s = 0; s < n;) {
        int32_t id = ids[s];
        s += token_length(&w, s);
        ids[k++] = id;
    }
    *n_ids = k;
    free(w.rank), free(w.min);
    return BPE_OK;
}
