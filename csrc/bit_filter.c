/* bit_filter.c - see bit_filter.h. */
#include "bit_filter.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"

#define BITS_PER_KEY 16

int bit_filter_init(bit_filter *f, int64_t n_keys) {
    memset(f, 0, sizeof *f);
    int log2_bits = 12;
    while (log2_bits < 62 && ((int64_t)1 << log2_bits) / BITS_PER_KEY < n_keys) log2_bits++;
    if (log2_bits > 40) return BPE_EOVERFLOW;
    f->bits = calloc(((size_t)1 << log2_bits) / 64, sizeof *f->bits);
    if (!f->bits) return BPE_ENOMEM;
    f->shift = 64 - log2_bits;
    return BPE_OK;
}

void bit_filter_free(bit_filter *f) {
    free(f->bits);
    memset(f, 0, sizeof *f);
}
