/* decode.c - token ids back to bytes (SPEC 2.5: the tokens' bytes, concatenated).
 *
 * The decoder holds every token's bytes back to back and, per id, where they start and how
 * long they are (-1: no token has that id). Decoding is two passes over the ids: the length,
 * which also finds an unknown id before anything is written, then the copies. Immutable once
 * built, so one decoder may serve several threads at once.
 *
 * Most tokens are a few bytes long, and a memcpy of a length known only at run time is a call
 * that costs more than the copy: a token of up to SHORT bytes is copied as SHORT bytes, a
 * fixed-size copy the compiler inlines, wherever SHORT bytes fit in what is left of the
 * output (the bytes past the token are overwritten by the tokens after it, or lie past the
 * end). The table is padded with SHORT bytes so that such a read never leaves it. */
#include <stdlib.h>
#include <string.h>

#include "bpe.h"

#define SHORT 16

struct bpe_decoder {
    uint8_t *bytes;
    int64_t *start, *len; /* of id i: bytes[start[i] .. start[i] + len[i]), len[i] -1: none */
    int64_t n_ids;
};

void bpe_decoder_free(bpe_decoder *d) {
    if (!d) return;
    free(d->bytes), free(d->start), free(d->len);
    free(d);
}

int bpe_decoder_new(const uint8_t *bytes, int64_t n_bytes, const int64_t *start,
                    const int64_t *len, int64_t n_ids, bpe_decoder **out) {
    if (!out || n_bytes < 0 || n_ids < 0 || (n_ids > 0 && (!start || !len)) ||
        (n_bytes > 0 && !bytes) || (uint64_t)n_ids > SIZE_MAX / sizeof(int64_t) - 1 ||
        (uint64_t)n_bytes > SIZE_MAX - SHORT)
        return BPE_EINVAL;
    *out = NULL;
    for (int64_t i = 0; i < n_ids; i++)
        if (len[i] < -1 || (len[i] >= 0 && (start[i] < 0 || start[i] > n_bytes - len[i])))
            return BPE_EINVAL;
    bpe_decoder *d = calloc(1, sizeof *d);
    if (!d) return BPE_ENOMEM;
    d->bytes = malloc((size_t)n_bytes + SHORT); /* SHORT bytes of padding: see above */
    d->start = malloc((size_t)n_ids * sizeof *d->start + 1);
    d->len = malloc((size_t)n_ids * sizeof *d->len + 1);
    if (!d->bytes || !d->start || !d->len) {
        bpe_decoder_free(d);
        return BPE_ENOMEM;
    }
    if (n_bytes > 0) memcpy(d->bytes, bytes, (size_t)n_bytes);
    memset(d->bytes + n_bytes, 0, SHORT);
    if (n_ids > 0) {
        memcpy(d->start, start, (size_t)n_ids * sizeof *d->start);
        memcpy(d->len, len, (size_t)n_ids * sizeof *d->len);
    }
    d->n_ids = n_ids;
    *out = d;
    return BPE_OK;
}

/* The length of id's bytes, or -1 if no token has that id. */
static inline int64_t token_len(const bpe_decoder *d, int64_t id) {
    return id >= 0 && id < d->n_ids ? d->len[id] : -1;
}

int bpe_decoder_length(const bpe_decoder *d, const int64_t *ids, int64_t n, int64_t *n_bytes,
                       int64_t *bad) {
    if (!d || !n_bytes || !bad || n < 0 || (n > 0 && !ids)) return BPE_EINVAL;
    int64_t total = 0;
    *bad = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t m = token_len(d, ids[i]);
        if (m < 0) {
            *bad = i;
            return BPE_EINVAL;
        }
        if (total > INT64_MAX - m) return BPE_EOVERFLOW;
        total += m;
    }
    *n_bytes = total;
    return BPE_OK;
}

int bpe_decoder_decode(const bpe_decoder *d, const int64_t *ids, int64_t n, uint8_t *out,
                       int64_t cap, int64_t *n_out) {
    if (!d || !n_out || n < 0 || cap < 0 || (n > 0 && !ids) || (cap > 0 && !out))
        return BPE_EINVAL;
    *n_out = 0;
    int64_t used = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t m = token_len(d, ids[i]);
        if (m < 0 || m > cap - used) return BPE_EINVAL;
        const uint8_t *token = d->bytes + d->start[ids[i]];
        if (m <= SHORT && cap - used >= SHORT)
            memcpy(out + used, token, SHORT);
        else
            memcpy(out + used, token, (size_t)m);
        used += m;
    }
    *n_out = used;
    return BPE_OK;
}
