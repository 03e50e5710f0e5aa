/* pair_queue.h - picks the next pair to merge: highest count, ties to the greatest pair in
 * byte order (SPEC 1.5).
 *
 * Frequency buckets with a max pointer: a pair counted c (below `threshold`) sits in the
 * doubly linked list bucket[c], so a count change is O(1). Pairs counted at or above
 * `threshold` sit in a binary heap ordered by (count, byte order). The bucket array has a
 * fixed size (`limit`), so memory never grows with the largest count.
 *
 * When the heap runs dry, the highest non-empty bucket is moved into the heap whole and the
 * threshold drops to its count. That keeps ties exact (the heap orders them) without scanning
 * a bucket for every merge. The max pointer almost only moves down, since a merge creates pairs
 * counted at most as much as the pair it merged; the one exception (a merge that re-spells an
 * existing token, see token_table.h) is handled by moving it back up on insertion.
 */
#ifndef PAIR_QUEUE_H
#define PAIR_QUEUE_H

#include <stdint.h>

#include "token_table.h"

/* One pair, as the queue sees it. The trainer owns the array of these. */
typedef struct {
    int32_t left, right;
    int64_t count;   /* live count, changed freely by the trainer */
    int64_t filed;   /* the count it is filed under; 0 when not queued. Heap iff >= threshold */
    int32_t prev;    /* bucket: previous pair in the list, or -1. heap: index in the heap */
    int32_t next;    /* bucket: next pair in the list, or -1 */
} pair_rec;

typedef struct {
    int32_t *bucket;    /* bucket[c]: first pair filed under count c, or -1 (c < threshold) */
    int64_t limit;      /* number of buckets */
    int64_t threshold;  /* pairs filed at or above it are in the heap */
    int64_t bucket_max; /* no bucket above it is non-empty */
    int32_t *heap;
    int64_t heap_n, heap_cap;
    const token_table *tokens; /* for byte-order tie breaks */
} pair_queue;

int pair_queue_init(pair_queue *q, int64_t limit, const token_table *tokens);
/* Files pairs[idx] under its current count (unfiles it when the count is 0). */
int pair_queue_update(pair_queue *q, pair_rec *pairs, int32_t idx);
/* Removes the best pair and writes its index to *best, or -1 when no pair has a positive
 * count. */
int pair_queue_pop(pair_queue *q, pair_rec *pairs, int32_t *best);
void pair_queue_free(pair_queue *q);

#endif
