/* encoder.c - building the encoder, and one word's BPE (encoder.h). */
#include "encoder.h"

#include <stdlib.h>
#include <string.h>

static int64_t encode_short(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *out);
static int find_whole_tokens(bpe_encoder *e, const int32_t *left, const int32_t *right,
                             int64_t n_merges, int64_t n_ids);
static int filter_whole_tokens(bpe_encoder *e);

int bpe_encoder_new(const int32_t *byte_ids, const int32_t *left, const int32_t *right,
                    const int32_t *merged, int64_t n_merges, int64_t n_ids, bpe_encoder **out) {
    if (!out || !byte_ids || n_merges < 0 || n_ids < 0 || n_merges >= INT32_MAX) return BPE_EINVAL;
    if (n_merges > 0 && (!left || !right || !merged)) return BPE_EINVAL;
    *out = NULL;
    for (int b = 0; b < 256; b++)
        if (byte_ids[b] < -1 || byte_ids[b] >= n_ids) return BPE_EINVAL;
    for (int64_t r = 0; r < n_merges; r++)
        if (left[r] < 0 || left[r] >= n_ids || right[r] < 0 || right[r] >= n_ids ||
            merged[r] < 0 || merged[r] >= n_ids)
            return BPE_EINVAL;

    bpe_encoder *e = calloc(1, sizeof *e);
    if (!e) return BPE_ENOMEM;
    e->whole_max_len = SHORT_WORD;
    e->n_ids = n_ids;
    memcpy(e->byte_ids, byte_ids, sizeof e->byte_ids);
    e->merged = malloc((size_t)n_merges * sizeof *e->merged + 1);
    e->byte_pair_rank = malloc(256 * 256 * sizeof *e->byte_pair_rank);
    int rc = e->merged && e->byte_pair_rank ? rank_table_init(&e->ranks, left, right, n_merges)
                                            : BPE_ENOMEM;
    if (rc == BPE_OK && n_merges > 0)
        memcpy(e->merged, merged, (size_t)n_merges * sizeof *e->merged);
    for (int x = 0; rc == BPE_OK && x < 256; x++)
        for (int y = 0; y < 256; y++)
            e->byte_pair_rank[x << 8 | y] = encoder_rank(e, e->byte_ids[x], e->byte_ids[y]);
    if (rc == BPE_OK) rc = find_whole_tokens(e, left, right, n_merges, n_ids);
    if (rc == BPE_OK) rc = filter_whole_tokens(e);
    if (rc != BPE_OK) {
        bpe_encoder_free(e);
        return rc;
    }
    *out = e;
    return BPE_OK;
}

void bpe_encoder_free(bpe_encoder *e) {
    if (!e) return;
    rank_table_free(&e->ranks);
    free(e->merged);
    free(e->byte_pair_rank);
    word_table_free(&e->whole);
    bit_filter_free(&e->whole_hashes);
    free(e);
}

/* Most words of real text are a token of the vocabulary (of realmix's pre-tokens of two bytes
 * or more, 97%, with a 50 000-token vocabulary trained on it), and their merges are most of
 * what a short text costs. But a token's bytes need not encode to that token: with merges
 * (b c), (a b), (ab c), "abc" is a token and encodes to [a, bc]. So the encoder encodes the
 * bytes of every token once, here, and keeps those that come out as a single token: for them
 * a lookup gives exactly what the merges would. Tokens are spelled from the merges (a byte's
 * token is that byte, a merge's is its pair's spellings joined); spellings over SHORT_WORD
 * bytes are left out, and so is any token spelled by a merge that names a token not yet
 * spelled, which only unusual vocabularies have. The spellings are indexed by id, so ids
 * scattered far beyond the number of tokens (legal, if odd) leave the table empty instead. */
#define WHOLE_MAX_IDS(n_merges) (8 * ((n_merges) + 256) + 65536)

static int find_whole_tokens(bpe_encoder *e, const int32_t *left, const int32_t *right,
                             int64_t n_merges, int64_t n_ids) {
    if (n_ids > WHOLE_MAX_IDS(n_merges)) return word_table_init(&e->whole, 0);
    int64_t *at = malloc((size_t)n_ids * sizeof *at + 1); /* spelling of id: arena + at[id] */
    int32_t *len = malloc((size_t)n_ids * sizeof *len + 1); /* its length; -1: none */
    int rc = at && len ? word_table_init(&e->whole, n_merges) : BPE_ENOMEM;
    uint8_t *arena = NULL;
    int64_t size = 0;
    /* Two passes over the merges: the spellings' lengths, then their bytes. */
    for (int pass = 0; rc == BPE_OK && pass < 2; pass++) {
        for (int64_t i = 0; i < n_ids; i++) len[i] = -1;
        int64_t used = 0;
        for (int b = 0; b < 256; b++) {
            int32_t id = e->byte_ids[b];
            if (id < 0 || len[id] >= 0) continue;
            if (arena) arena[used] = (uint8_t)b;
            at[id] = used++;
            len[id] = 1;
        }
        for (int64_t r = 0; r < n_merges; r++) {
            int32_t t = e->merged[r], a = left[r], b = right[r];
            if (len[t] >= 0 || len[a] < 0 || len[b] < 0 || len[a] + len[b] > SHORT_WORD)
                continue;
            if (arena) {
                memcpy(arena + used, arena + at[a], (size_t)len[a]);
                memcpy(arena + used + len[a], arena + at[b], (size_t)len[b]);
            }
            at[t] = used;
            len[t] = len[a] + len[b];
            used += len[t];
        }
        size = used;
        if (pass == 0 && !(arena = malloc((size_t)size + 1))) rc = BPE_ENOMEM;
    }
    /* Each token that encodes to itself goes in with a count of 0, and then gets its id as its
     * count: two tokens spelled alike encode alike, so they set the same id. */
    int32_t ids[SHORT_WORD];
    int32_t *seq = malloc((size_t)n_ids * sizeof *seq + 1);  /* of the i-th such token */
    int32_t *id = malloc((size_t)n_ids * sizeof *id + 1);    /* and its id */
    if (rc == BPE_OK && (!seq || !id)) rc = BPE_ENOMEM;
    int64_t n_whole = 0;
    word_batch batch = {.n = 0};
    for (int64_t t = 0; rc == BPE_OK && t < n_ids; t++) {
        if (len[t] < 2) continue;
        const uint8_t *w = arena + at[t];
        if (encode_short(e, w, len[t], ids) != 1) continue;
        id[n_whole] = ids[0];
        rc = word_batch_push(&e->whole, &batch, word_key_of(w, len[t], size - at[t]), 0,
                             seq + n_whole++);
    }
    if (rc == BPE_OK) rc = word_batch_flush(&e->whole, &batch);
    for (int64_t i = 0; rc == BPE_OK && i < n_whole; i++)
        e->whole.slots[e->whole.slot_of[seq[i]]].count = id[i];
    free(at), free(len), free(arena), free(seq), free(id);
    return rc;
}

/* The filter in front of e->whole (encoder_may_be_whole): the hash of each of its words. */
static int filter_whole_tokens(bpe_encoder *e) {
    int rc = bit_filter_init(&e->whole_hashes, e->whole.n);
    for (int64_t s = 0; rc == BPE_OK && s < e->whole.n; s++)
        bit_filter_add(&e->whole_hashes, e->whole.hash[s]);
    return rc;
}

int bpe_encoder_set_whole_tokens(bpe_encoder *e, const uint8_t *bytes, const int64_t *offsets,
                                 const int32_t *ids, int64_t n) {
    if (!e || n < 0 || !offsets || offsets[0] != 0 || (n > 0 && !ids)) return BPE_EINVAL;
    int64_t longest = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = offsets[i + 1] - offsets[i];
        if (len < 0 || ids[i] < 0 || ids[i] >= e->n_ids) return BPE_EINVAL;
        if (len > longest) longest = len;
    }
    if (offsets[n] > 0 && !bytes) return BPE_EINVAL;
    /* Built aside, then swapped in: on an error the encoder keeps what it had. */
    bpe_encoder next = *e;
    memset(&next.whole, 0, sizeof next.whole);
    memset(&next.whole_hashes, 0, sizeof next.whole_hashes);
    int32_t *seq = malloc((size_t)n * sizeof *seq + 1); /* the number of token i's bytes */
    int rc = seq ? word_table_init(&next.whole, n) : BPE_ENOMEM;
    word_batch batch = {.n = 0};
    for (int64_t i = 0; rc == BPE_OK && i < n; i++) {
        int64_t len = offsets[i + 1] - offsets[i];
        seq[i] = -1;
        if (len >= 2) /* a byte is its byte id's already */
            rc = word_batch_push(&next.whole, &batch,
                                 word_key_of(bytes + offsets[i], len, len), 0, &seq[i]);
    }
    if (rc == BPE_OK) rc = word_batch_flush(&next.whole, &batch);
    /* Last to first, so that bytes listed twice keep their first id. */
    for (int64_t i = n - 1; rc == BPE_OK && i >= 0; i--)
        if (seq[i] >= 0) next.whole.slots[next.whole.slot_of[seq[i]]].count = ids[i];
    if (rc == BPE_OK) rc = filter_whole_tokens(&next);
    free(seq);
    if (rc != BPE_OK) {
        word_table_free(&next.whole);
        bit_filter_free(&next.whole_hashes);
        return rc;
    }
    word_table_free(&e->whole);
    bit_filter_free(&e->whole_hashes);
    e->whole = next.whole;
    e->whole_hashes = next.whole_hashes;
    e->whole_max_len = longest > SHORT_WORD ? longest : SHORT_WORD;
    return BPE_OK;
}

/* ---- words of up to SHORT_WORD bytes: array, rescan for the lowest rank ---- */

/* Moves a[from + 1 .. n) down one place, four at a time through a 16-byte temporary: the
 * loads of each step read past what the step before it wrote. The arrays have room for
 * SHORT_WORD + 3 items, so a last step that reads past n stays inside them. Not memmove:
 * these moves are a few items long and a library call costs more than the move. */
static inline void shift_down(int32_t *a, int64_t from, int64_t n) {
    for (int64_t j = from; j < n - 1; j += 4) {
        int32_t tmp[4];
        memcpy(tmp, a + j + 1, sizeof tmp);
        memcpy(a + j, tmp, sizeof tmp);
    }
}

static int64_t encode_short(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *out) {
    int32_t ids[SHORT_WORD + 3];
    int32_t rank[SHORT_WORD + 3]; /* rank[i]: rank of (ids[i], ids[i+1]) */
    for (int64_t i = 0; i < n; i++) ids[i] = e->byte_ids[w[i]];
    for (int64_t i = 0; i + 1 < n; i++) rank[i] = e->byte_pair_rank[w[i] << 8 | w[i + 1]];
    while (n > 1) {
        int64_t best = 0;
        int32_t low = rank[0];
        for (int64_t i = 1; i + 1 < n; i++) {
            int32_t r = rank[i];
            best = r < low ? i : best; /* strict: leftmost among equals */
            low = r < low ? r : low;
        }
        if (low == NO_RANK) break;
        ids[best] = e->merged[low];
        shift_down(ids, best + 1, n);
        shift_down(rank, best + 1, n - 1);
        n--;
        if (best > 0) rank[best - 1] = encoder_rank(e, ids[best - 1], ids[best]);
        if (best + 1 < n) rank[best] = encoder_rank(e, ids[best], ids[best + 1]);
    }
    memcpy(out, ids, (size_t)n * sizeof *ids);
    return n;
}

int encoder_merge_word(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                       int64_t *n_ids) {
    if (n <= SHORT_WORD) {
        *n_ids = encode_short(e, w, n, ids);
        return BPE_OK;
    }
    return encode_long_word(e, w, n, ids, n_ids);
}

int encoder_encode_entry(const bpe_encoder *e, const word_table *t, int64_t seq, int32_t *ids,
                         int64_t *n_ids) {
    int64_t len;
    const uint8_t *p = word_table_key(t, seq, &len);
    /* The key from the table: its hash for the filter, its slot (read only if the filter
     * lets the word through) for the lookup. */
    word_key key = {p, len, 0, 0, t->hash[seq]};
    if (encoder_may_be_whole(e, &key)) {
        const word_slot *slot = &t->slots[t->slot_of[seq]];
        key.head = slot->head, key.tail = slot->tail;
        if (encoder_find_whole(e, &key, ids, n_ids)) return BPE_OK;
    }
    return encoder_merge_word(e, p, len, ids, n_ids);
}
