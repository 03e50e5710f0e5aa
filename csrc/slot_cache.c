/* slot_cache.c - see slot_cache.h. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (big_alloc.h) */
#include "slot_cache.h"

#include <stdlib.h>

int bpe_slot_cache_new(bpe_slot_cache **out) {
    if (!out) return BPE_EINVAL;
    *out = calloc(1, sizeof **out);
    return *out ? BPE_OK : BPE_ENOMEM;
}

void bpe_slot_cache_free(bpe_slot_cache *c) {
    if (!c) return;
    for (int i = 0; i < SLOT_CACHE_BLOCKS; i++) free(c->block[i]);
    free(c);
}

int64_t bpe_slot_cache_held(const bpe_slot_cache *c) {
    int64_t held = 0;
    for (int i = 0; c && i < SLOT_CACHE_BLOCKS; i++)
        if (c->block[i]) held += (int64_t)c->bytes[i];
    return held;
}

void *slot_cache_alloc(bpe_slot_cache *c, size_t bytes, size_t *got) {
    int best = -1;
    if (c && bytes >= SLOT_CACHE_MIN_BYTES)
        for (int i = 0; i < SLOT_CACHE_BLOCKS; i++)
            if (c->block[i] && c->bytes[i] >= bytes &&
                (best < 0 || c->bytes[i] < c->bytes[best]))
                best = i;
    if (best >= 0) {
        void *block = c->block[best];
        *got = c->bytes[best];
        c->block[best] = NULL;
        return block;
    }
    *got = big_alloc_size(bytes);
    return big_alloc(bytes);
}

void slot_cache_free(bpe_slot_cache *c, void *block, size_t got) {
    if (c && block && got >= SLOT_CACHE_MIN_BYTES && got <= SLOT_CACHE_MAX_BYTES) {
        int place = 0; /* an empty place, else the smallest block */
        for (int i = 1; i < SLOT_CACHE_BLOCKS; i++)
            if (c->block[place] && (!c->block[i] || c->bytes[i] < c->bytes[place])) place = i;
        if (!c->block[place] || c->bytes[place] < got) {
            void *smaller = c->block[place];
            c->block[place] = block;
            c->bytes[place] = got;
            block = smaller;
        }
    }
    free(block);
}
