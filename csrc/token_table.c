/* token_table.c - see token_table.h. */
#include "token_table.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "grow.h"

static uint64_t hash_bytes(const uint8_t *p, int64_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
    for (int64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static const uint8_t *bytes_of(const token_table *tt, int32_t id) {
    return tt->bytes + tt->start[id];
}

/* Slot of the token spelled p[0..n) with hash h, or of the free slot where it would go. */
static int64_t find_slot(const token_table *tt, const uint8_t *p, int64_t n, uint64_t h) {
    int64_t mask = tt->n_slots - 1, i = (int64_t)(h & (uint64_t)mask);
    for (;; i = (i + 1) & mask) {
        int32_t id = tt->slots[i];
        if (id < 0) return i;
        if (tt->hash[id] == h && tt->len[id] == n && memcmp(bytes_of(tt, id), p, (size_t)n) == 0)
            return i;
    }
}

static int alloc_slots(token_table *tt, int64_t n_slots) {
    if ((uint64_t)n_slots > SIZE_MAX / sizeof(int32_t)) return BPE_EOVERFLOW;
    int32_t *slots = malloc((size_t)n_slots * sizeof *slots);
    if (!slots) return BPE_ENOMEM;
    memset(slots, 0xFF, (size_t)n_slots * sizeof *slots); /* every slot -1 */
    free(tt->slots);
    tt->slots = slots;
    tt->n_slots = n_slots;
    for (int32_t id = 0; id < tt->n; id++)
        if (tt->canon[id] == id)
            tt->slots[find_slot(tt, bytes_of(tt, id), tt->len[id], tt->hash[id])] = id;
    return BPE_OK;
}

int token_table_init(token_table *tt) {
    memset(tt, 0, sizeof *tt);
    tt->cap = 512;
    tt->cap_bytes = 4096;
    tt->bytes = malloc((size_t)tt->cap_bytes);
    tt->start = malloc((size_t)tt->cap * sizeof *tt->start);
    tt->len = malloc((size_t)tt->cap * sizeof *tt->len);
    tt->canon = malloc((size_t)tt->cap * sizeof *tt->canon);
    tt->hash = malloc((size_t)tt->cap * sizeof *tt->hash);
    if (!tt->bytes || !tt->start || !tt->len || !tt->canon || !tt->hash) {
        token_table_free(tt);
        return BPE_ENOMEM;
    }
    for (int32_t i = 0; i < 256; i++) {
        tt->bytes[i] = (uint8_t)i;
        tt->start[i] = i;
        tt->len[i] = 1;
        tt->canon[i] = i;
        tt->hash[i] = hash_bytes(&tt->bytes[i], 1);
    }
    tt->n = 256;
    tt->n_bytes = 256;
    int rc = alloc_slots(tt, 1024);
    if (rc != BPE_OK) token_table_free(tt);
    return rc;
}

static int grow_ids(token_table *tt) {
    int64_t cap = grow_capacity(tt->cap, (int64_t)tt->cap + 1, 512);
    if (cap < 0 || cap > INT32_MAX) return BPE_EOVERFLOW; /* ids are int32 */
    int rc;
    int64_t *start = resize_array(tt->start, cap, sizeof *start, &rc);
    if (!start) return rc;
    tt->start = start;
    int64_t *len = resize_array(tt->len, cap, sizeof *len, &rc);
    if (!len) return rc;
    tt->len = len;
    int32_t *canon = resize_array(tt->canon, cap, sizeof *canon, &rc);
    if (!canon) return rc;
    tt->canon = canon;
    uint64_t *hash = resize_array(tt->hash, cap, sizeof *hash, &rc);
    if (!hash) return rc;
    tt->hash = hash;
    tt->cap = (int32_t)cap;
    return BPE_OK;
}

static int reserve_bytes(token_table *tt, int64_t extra) {
    int rc;
    uint8_t *bytes = reserve_array(tt->bytes, &tt->cap_bytes, tt->n_bytes + extra, 4096, 1, &rc);
    if (!bytes) return rc;
    tt->bytes = bytes;
    return BPE_OK;
}

int token_table_add(token_table *tt, int32_t a, int32_t b, int32_t *id, int32_t *canonical) {
    if (a < 0 || b < 0 || a >= tt->n || b >= tt->n) return BPE_EINVAL;
    if (tt->n == INT32_MAX) return BPE_EOVERFLOW;
    int rc;
    if (tt->n == tt->cap && (rc = grow_ids(tt)) != BPE_OK) return rc;
    if (2 * (int64_t)(tt->n + 1) > tt->n_slots && (rc = alloc_slots(tt, 2 * tt->n_slots)) != BPE_OK)
        return rc;
    int64_t la = tt->len[a], lb = tt->len[b];
    if ((rc = reserve_bytes(tt, la + lb)) != BPE_OK) return rc;
    /* Spell the token at the end of the arena (after reserving: that may move it). */
    uint8_t *p = tt->bytes + tt->n_bytes;
    memcpy(p, tt->bytes + tt->start[a], (size_t)la);
    memcpy(p + la, tt->bytes + tt->start[b], (size_t)lb);
    uint64_t h = hash_bytes(p, la + lb);
    int64_t slot = find_slot(tt, p, la + lb, h);
    int32_t n = tt->n++;
    tt->len[n] = la + lb;
    tt->hash[n] = h;
    if (tt->slots[slot] >= 0) { /* spelled like an earlier token: share its bytes */
        tt->canon[n] = tt->slots[slot];
        tt->start[n] = tt->start[tt->canon[n]];
    } else {
        tt->canon[n] = n;
        tt->start[n] = tt->n_bytes;
        tt->n_bytes += la + lb;
        tt->slots[slot] = n;
    }
    *id = n;
    *canonical = tt->canon[n];
    return BPE_OK;
}

int token_table_cmp(const token_table *tt, int32_t a, int32_t b) {
    if (a == b) return 0;
    int64_t la = tt->len[a], lb = tt->len[b];
    int c = memcmp(bytes_of(tt, a), bytes_of(tt, b), (size_t)(la < lb ? la : lb));
    if (c != 0) return c;
    return (la > lb) - (la < lb);
}

void token_table_free(token_table *tt) {
    free(tt->bytes);
    free(tt->start);
    free(tt->len);
    free(tt->canon);
    free(tt->slots);
    free(tt->hash);
    memset(tt, 0, sizeof *tt);
}
