/* word_table.c - see word_table.h. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (big_alloc.h) */
#include "word_table.h"

#include <stdlib.h>
#include <string.h>

#include "big_alloc.h"
#include "bpe.h"
#include "grow.h"

static int alloc_slots(word_table *t, int64_t n_slots) {
    if ((uint64_t)n_slots > SIZE_MAX / sizeof(word_slot)) return BPE_EOVERFLOW;
    word_slot *slots = big_alloc((size_t)n_slots * sizeof *slots);
    if (!slots) return BPE_ENOMEM;
    for (int64_t i = 0; i < n_slots; i++) slots[i].seq = -1;
    for (int64_t s = 0; s < t->n; s++) { /* move every word, recording its new slot */
        const word_slot *old = &t->slots[t->slot_of[s]];
        int64_t i = (int64_t)(old->hash & (uint64_t)(n_slots - 1));
        while (slots[i].seq >= 0) i = (i + 1) & (n_slots - 1);
        slots[i] = *old;
        t->slot_of[s] = i;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return BPE_OK;
}

int word_table_init(word_table *t) {
    memset(t, 0, sizeof *t);
    t->cap = 1024;
    t->cap_bytes = 16384;
    t->start = malloc((size_t)(t->cap + 1) * sizeof *t->start);
    t->slot_of = malloc((size_t)t->cap * sizeof *t->slot_of);
    t->arena = malloc((size_t)t->cap_bytes);
    int rc = (t->start && t->slot_of && t->arena) ? alloc_slots(t, 2048) : BPE_ENOMEM;
    if (rc != BPE_OK) {
        word_table_free(t);
        return rc;
    }
    t->start[0] = 0;
    return BPE_OK;
}

int word_table_reserve(word_table *t, int64_t n) {
    int64_t n_slots = t->n_slots;
    while (n_slots < 2 * n) {
        if (n_slots > INT64_MAX / 4) return BPE_EOVERFLOW;
        n_slots *= 2;
    }
    return n_slots > t->n_slots ? alloc_slots(t, n_slots) : BPE_OK;
}

/* Room for one more word of len bytes. */
static int reserve(word_table *t, int64_t len) {
    int rc;
    if (t->n == t->cap) {
        int64_t cap = grow_capacity(t->cap, t->n + 1, 1024);
        if (cap < 0 || cap >= INT32_MAX) return BPE_EOVERFLOW; /* seq is an int32 */
        int64_t *start = resize_array(t->start, cap + 1, sizeof *start, &rc);
        if (!start) return rc;
        t->start = start;
        int64_t *slot_of = resize_array(t->slot_of, cap, sizeof *slot_of, &rc);
        if (!slot_of) return rc;
        t->slot_of = slot_of;
        t->cap = cap;
    }
    uint8_t *a = reserve_array(t->arena, &t->cap_bytes, t->n_bytes + len, 16384, 1, &rc);
    if (!a) return rc;
    t->arena = a;
    if (2 * (t->n + 1) > t->n_slots) return alloc_slots(t, 2 * t->n_slots);
    return BPE_OK;
}

int word_table_add_hashed(word_table *t, const uint8_t *w, int64_t len, uint64_t h,
                          int64_t count, int64_t *seq) {
    if (len > INT32_MAX) return BPE_EOVERFLOW;
    uint64_t prefix = word_table_prefix(w, len);
    int64_t mask = t->n_slots - 1, i = (int64_t)(h & (uint64_t)mask);
    for (; t->slots[i].seq >= 0; i = (i + 1) & mask) {
        word_slot *s = &t->slots[i];
        if (s->hash != h || s->len != len || s->prefix != prefix) continue;
        if (len > 8 && memcmp(t->arena + t->start[s->seq] + 8, w + 8, (size_t)(len - 8)) != 0)
            continue;
        if (s->count > INT64_MAX - count) return BPE_EOVERFLOW;
        s->count += count;
        if (seq) *seq = s->seq;
        return BPE_OK;
    }
    int rc = reserve(t, len);
    if (rc != BPE_OK) return rc;
    if (t->n_slots - 1 != mask) { /* the table grew: find the free slot again */
        mask = t->n_slots - 1;
        for (i = (int64_t)(h & (uint64_t)mask); t->slots[i].seq >= 0; i = (i + 1) & mask) {
        }
    }
    t->slots[i] = (word_slot){h, count, prefix, (int32_t)len, (int32_t)t->n};
    if (len > 0) memcpy(t->arena + t->n_bytes, w, (size_t)len);
    t->n_bytes += len;
    t->slot_of[t->n] = i;
    t->start[++t->n] = t->n_bytes;
    if (seq) *seq = t->n - 1;
    return BPE_OK;
}

int word_batch_flush(word_table *t, word_batch *b) {
    for (int j = 0; j < b->n; j++) {
        int64_t seq;
        int rc = word_table_add_hashed(t, b->ptr[j], b->len[j], b->hash[j], b->count[j], &seq);
        if (rc != BPE_OK) return rc;
        if (b->seq_out[j]) *b->seq_out[j] = (int32_t)seq; /* numbers fit an int32 */
    }
    b->n = 0;
    return BPE_OK;
}

void word_table_free(word_table *t) {
    free(t->slots);
    free(t->arena);
    free(t->start);
    free(t->slot_of);
    memset(t, 0, sizeof *t);
}
