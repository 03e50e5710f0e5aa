/* bit_filter.h - a set of 64-bit hashes that answers "certainly not in it" or "maybe".
 *
 * One bit per value of a hash's top bits, about sixteen bits per key, set for the keys added:
 * a Bloom filter with one hash. A key not added finds its bit clear ~95% of the time. The
 * encoder puts one in front of each table that is looked up mostly for keys it does not hold
 * (pairs that are no merge, words that are no token): the filter is small enough to stay in a
 * core's L2, which the tables are not. Hashes must be well mixed in their top bits; a table
 * that indexes its slots with the low bits of the same hash keeps the two independent. */
#ifndef BIT_FILTER_H
#define BIT_FILTER_H

#include <stdint.h>

typedef struct {
    uint64_t *bits;
    int shift; /* 64 - log2 of the number of bits */
} bit_filter;

/* An empty filter for up to n_keys keys (at least 4 096 bits). */
int bit_filter_init(bit_filter *f, int64_t n_keys);
void bit_filter_free(bit_filter *f);

static inline void bit_filter_add(bit_filter *f, uint64_t hash) {
    uint64_t bit = hash >> f->shift;
    f->bits[bit >> 6] |= (uint64_t)1 << (bit & 63);
}

/* 0: hash was never added. 1: it may have been. */
static inline int bit_filter_may_hold(const bit_filter *f, uint64_t hash) {
    uint64_t bit = hash >> f->shift;
    return (int)(f->bits[bit >> 6] >> (bit & 63) & 1);
}

#endif
