/* word_table.c - see word_table.h. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (big_alloc.h) */
#include "word_table.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "grow.h"
#include "big_alloc.h"

static int alloc_slots(word_table *t, int64_t n_slots) {
    if ((uint64_t)n_slots > SIZE_MAX / sizeof(word_slot)) return BPE_EOVERFLOW;
    word_slot *slots = big_alloc((size_t)n_slots * sizeof *slots);
    if (!slots) return BPE_ENOMEM;
    for (int64_t i = 0; i < n_slots; i++) slots[i].seq = -1;
    for (int64_t s = 0; s < t->n; s++) { /* move every word, recording its new slot */
        const word_slot *old = &t->slots[t->slot_of[s]];
        int64_t i = (int64_t)(t->hash[s] & (uint64_t)(n_slots - 1));
        while (slots[i].seq >= 0) i = (i + 1) & (n_slots - 1);
        slots[i] = *old;
        t->slot_of[s] = i;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return BPE_OK;
}

int word_table_init(word_table *t, int64_t most) {
    memset(t, 0, sizeof *t);
    /* A short text's tables are made on every call: start them no larger than it can fill. */
    int64_t n_slots = 2048;
    while (most > 0 && n_slots > 64 && n_slots / 2 >= 2 * most) n_slots /= 2;
    t->cap = n_slots / 2;
    t->cap_bytes = 8 * n_slots;
    t->start = malloc((size_t)(t->cap + 1) * sizeof *t->start);
    t->slot_of = malloc((size_t)t->cap * sizeof *t->slot_of);
    t->hash = malloc((size_t)t->cap * sizeof *t->hash);
    t->arena = malloc((size_t)t->cap_bytes);
    int rc = (t->start && t->slot_of && t->hash && t->arena) ? alloc_slots(t, n_slots) : BPE_ENOMEM;
    if (rc != BPE_OK) {
        word_table_free(t);
        return rc;
    }
    t->start[0] = 0;
    return BPE_OK;
}

/* Room in the per-word arrays for `need` words. */
static int reserve_words(word_table *t, int64_t need) {
    int rc = BPE_OK;
    if (need > t->cap) {
        int64_t cap = grow_capacity(t->cap, need, 1024);
        if (cap < 0 || cap >= INT32_MAX) return BPE_EOVERFLOW; /* seq is an int32 */
        int64_t *start = resize_array(t->start, cap + 1, sizeof *start, &rc);
        if (!start) return rc;
        t->start = start;
        int64_t *slot_of = resize_array(t->slot_of, cap, sizeof *slot_of, &rc);
        if (!slot_of) return rc;
        t->slot_of = slot_of;
        uint64_t *hash = resize_array(t->hash, cap, sizeof *hash, &rc);
        if (!hash) return rc;
        t->hash = hash;
        t->cap = cap;
    }
    return rc;
}

int word_table_reserve(word_table *t, int64_t n) {
    int64_t n_slots = t->n_slots;
    while (n_slots < 2 * n) {
        if (n_slots > INT64_MAX / 4) return BPE_EOVERFLOW;
        n_slots *= 2;
    }
    int rc = reserve_words(t, n);
    if (rc == BPE_OK && n_slots > t->n_slots) rc = alloc_slots(t, n_slots);
    return rc;
}

/* Room for one more word of len bytes. */
static int reserve(word_table *t, int64_t len) {
    int rc = reserve_words(t, t->n + 1);
    if (rc != BPE_OK) return rc;
    uint8_t *a = reserve_array(t->arena, &t->cap_bytes, t->n_bytes + len, 16384, 1, &rc);
    if (!a) return rc;
    t->arena = a;
    if (2 * (t->n + 1) > t->n_slots) return alloc_slots(t, 2 * t->n_slots);
    return BPE_OK;
}

/* Inserts the word k, not in the table, at free slot i (found with the current mask). */
static int insert(word_table *t, const word_key *k, int64_t count, int64_t i, int64_t *seq) {
    if (k->len > INT32_MAX) return BPE_EOVERFLOW;
    int64_t mask = t->n_slots - 1;
    int rc = reserve(t, k->len);
    if (rc != BPE_OK) return rc;
    if (t->n_slots - 1 != mask) { /* the table grew: find the free slot again */
        mask = t->n_slots - 1;
        for (i = (int64_t)(k->hash & (uint64_t)mask); t->slots[i].seq >= 0; i = (i + 1) & mask) {
        }
    }
    t->slots[i] = (word_slot){k->head, k->tail, count, (int32_t)k->len, (int32_t)t->n};
    if (k->len > 0) memcpy(t->arena + t->n_bytes, k->ptr, (size_t)k->len);
    t->n_bytes += k->len;
    t->slot_of[t->n] = i;
    t->hash[t->n] = k->hash;
    t->start[++t->n] = t->n_bytes;
    *seq = t->n - 1;
    return BPE_OK;
}

/* The slot holding key k, or the free slot where the probe for it ended. */
static inline int64_t probe(const word_table *t, const word_key *k) {
    int64_t mask = t->n_slots - 1, i = (int64_t)(k->hash & (uint64_t)mask);
    for (; t->slots[i].seq >= 0; i = (i + 1) & mask) {
        const word_slot *s = &t->slots[i];
        if (s->len != k->len || s->head != k->head || s->tail != k->tail) continue;
        /* Head and tail hold keys of up to 16 bytes; compare the rest of longer ones. */
        if (k->len > 16 &&
            !word_table_same_bytes(t->arena + t->start[s->seq] + 16, k->ptr + 16, k->len - 16))
            continue;
        break;
    }
    return i;
}

static inline int add(word_table *t, const word_key *k, int64_t count, int64_t *seq) {
    int64_t i = probe(t, k);
    word_slot *s = &t->slots[i];
    if (s->seq < 0) return insert(t, k, count, i, seq);
    if (s->count > INT64_MAX - count) return BPE_EOVERFLOW;
    s->count += count;
    *seq = s->seq;
    return BPE_OK;
}

int word_table_find(const word_table *t, const word_key *k, int64_t *count) {
    const word_slot *s = &t->slots[probe(t, k)];
    if (s->seq < 0) return 0;
    *count = s->count;
    return 1;
}

int word_batch_flush(word_table *t, word_batch *b) {
    for (int j = 0; j < b->n; j++) {
        int64_t seq;
        int rc = add(t, &b->key[j], b->count[j], &seq);
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
    free(t->hash);
    memset(t, 0, sizeof *t);
}
