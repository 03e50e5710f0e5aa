/* slot_cache.h - hash tables' large slot blocks, kept from one encode to the next.
 *
 * Encoding a long text builds two hash tables for each part (its distinct units, and their
 * pre-tokens) of several MB each, and frees them. Fresh memory costs more than its size
 * suggests: the kernel zeroes each page on first touch, and on a VM whose host takes free
 * memory back (virtio-balloon free page reporting) the host must back each page anew too.
 * A cache keeps the largest blocks freed in one call for the next call that borrows it (a
 * Tokenizer keeps one per thread in flight). Small blocks stay malloc's business, and blocks
 * over SLOT_CACHE_MAX_BYTES are freed, which bounds what a cache holds.
 *
 * A cache is not locked: whoever lends it out gives it to one call at a time. */
#ifndef SLOT_CACHE_H
#define SLOT_CACHE_H

#include <stddef.h>

#include "big_alloc.h"
#include "bpe.h"

/* A table that grows needs its old block and its new one at once, while the other table of
 * the part may hold a third. */
#define SLOT_CACHE_BLOCKS 3
#define SLOT_CACHE_MIN_BYTES (2 * BIG_ALLOC_PAGE) /* big_alloc's huge-page blocks */
#define SLOT_CACHE_MAX_BYTES ((size_t)32 << 20)

struct bpe_slot_cache {
    void *block[SLOT_CACHE_BLOCKS]; /* NULL: an empty place */
    size_t bytes[SLOT_CACHE_BLOCKS];
};

/* A block of at least `bytes` (as big_alloc gives it), its size in *got: the smallest kept in
 * c that is large enough, else a new one. c may be NULL (no cache). NULL if out of memory. */
void *slot_cache_alloc(bpe_slot_cache *c, size_t bytes, size_t *got);
/* Takes back a block from slot_cache_alloc (`got` bytes): kept in c, in place of a smaller
 * one if c is full, or freed. */
void slot_cache_free(bpe_slot_cache *c, void *block, size_t got);

#endif
