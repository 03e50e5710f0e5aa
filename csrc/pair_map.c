/* pair_map.c - see pair_map.h. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (big_alloc.h) */
#include "pair_map.h"

#include <stdlib.h>
#include <string.h>

#include "big_alloc.h"
#include "bpe.h"

static int alloc_table(pair_map *m, int64_t cap) {
    if ((uint64_t)cap > SIZE_MAX / sizeof(pair_map_slot)) return BPE_EOVERFLOW;
    m->slots = big_alloc((size_t)cap * sizeof *m->slots);
    if (!m->slots) return BPE_ENOMEM;
    for (int64_t i = 0; i < cap; i++) m->slots[i].key = PAIR_MAP_EMPTY;
    m->cap = cap;
    return BPE_OK;
}

int pair_map_init(pair_map *m, int64_t expected) {
    memset(m, 0, sizeof *m);
    int64_t cap = 64;
    while (cap < 2 * expected) {
        if (cap > INT64_MAX / 4) return BPE_EOVERFLOW;
        cap *= 2;
    }
    return alloc_table(m, cap);
}

static void put_new(pair_map *m, uint64_t key, int32_t val) {
    uint64_t i = pair_map_slot_of(key, m->cap);
    while (m->slots[i].key != PAIR_MAP_EMPTY) i = (i + 1) & (uint64_t)(m->cap - 1);
    m->slots[i].key = key;
    m->slots[i].val = val;
}

static int grow(pair_map *m) {
    if (m->cap > INT64_MAX / 4) return BPE_EOVERFLOW;
    pair_map old = *m;
    int rc = alloc_table(m, old.cap * 2);
    if (rc != BPE_OK) {
        *m = old;
        return rc;
    }
    for (int64_t i = 0; i < old.cap; i++)
        if (old.slots[i].key != PAIR_MAP_EMPTY) put_new(m, old.slots[i].key, old.slots[i].val);
    free(old.slots);
    return BPE_OK;
}

int pair_map_get_or_put(pair_map *m, uint64_t key, int32_t *val, int *inserted) {
    uint64_t i = pair_map_slot_of(key, m->cap);
    for (; m->slots[i].key != PAIR_MAP_EMPTY; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (m->slots[i].key == key) {
            *val = m->slots[i].val;
            *inserted = 0;
            return BPE_OK;
        }
    }
    *inserted = 1;
    if (2 * (m->n + 1) > m->cap) { /* keep the table at most half full */
        int rc = grow(m);
        if (rc != BPE_OK) return rc;
        put_new(m, key, *val);
    } else {
        m->slots[i].key = key;
        m->slots[i].val = *val;
    }
    m->n++;
    return BPE_OK;
}

void pair_map_free(pair_map *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}
