/* grow.h - growing arrays, with the overflow checks in one place.
 *
 * Every growable array in the library doubles its capacity; these two helpers do the
 * arithmetic and the realloc so that no call site multiplies sizes by hand. */
#ifndef GROW_H
#define GROW_H

#include <stdint.h>
#include <stdlib.h>

#include "bpe.h"

/* The capacity to grow `cap` to so that it holds `need` items: doubled as often as needed,
 * at least `first`. -1 if that overflows. */
static inline int64_t grow_capacity(int64_t cap, int64_t need, int64_t first) {
    if (cap < first) cap = first;
    while (cap < need) {
        if (cap > INT64_MAX / 2) return -1;
        cap *= 2;
    }
    return cap;
}

/* realloc(p, n items of `size` bytes); NULL with *rc set when that overflows or fails, in
 * which case p is still valid and unchanged. */
static inline void *resize_array(void *p, int64_t n, size_t size, int *rc) {
    if (n < 0 || (uint64_t)n > SIZE_MAX / size - 1) {
        *rc = BPE_EOVERFLOW;
        return NULL;
    }
    void *q = realloc(p, (size_t)n * size + 1); /* + 1: never a zero-size request */
    if (!q) *rc = BPE_ENOMEM;
    return q;
}

/* Room for `need` items in array p of capacity *cap, growing it as grow_capacity says (at
 * least `first`). Returns the array, moved or not; NULL with *rc set on failure, in which case
 * p and *cap are unchanged. */
static inline void *reserve_array(void *p, int64_t *cap, int64_t need, int64_t first,
                                  size_t size, int *rc) {
    *rc = BPE_OK;
    if (need <= *cap) return p;
    int64_t c = grow_capacity(*cap, need, first);
    if (c < 0) {
        *rc = BPE_EOVERFLOW;
        return NULL;
    }
    void *q = resize_array(p, c, size, rc);
    if (q) *cap = c;
    return q;
}

#endif
