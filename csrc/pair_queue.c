/* pair_queue.c - see pair_queue.h. */
#include "pair_queue.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "grow.h"

/* ---- ordering ---- */

/* Whether pair a must be merged before pair b: higher filed count, then the greater
 * (bytes(left), bytes(right)) tuple. Uses `filed`, not `count`, so the heap stays a heap
 * while the trainer changes several counts before refiling them. */
static int comes_first(const pair_queue *q, const pair_rec *pairs, int32_t a, int32_t b) {
    const pair_rec *pa = &pairs[a], *pb = &pairs[b];
    if (pa->filed != pb->filed) return pa->filed > pb->filed;
    int c = token_table_cmp(q->tokens, pa->left, pb->left);
    if (c == 0) c = token_table_cmp(q->tokens, pa->right, pb->right);
    return c > 0;
}

/* ---- heap ---- */

static void heap_set(pair_queue *q, pair_rec *pairs, int64_t i, int32_t idx) {
    q->heap[i] = idx;
    pairs[idx].prev = (int32_t)i;
}

static void sift_up(pair_queue *q, pair_rec *pairs, int64_t i) {
    int32_t idx = q->heap[i];
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!comes_first(q, pairs, idx, q->heap[parent])) break;
        heap_set(q, pairs, i, q->heap[parent]);
        i = parent;
    }
    heap_set(q, pairs, i, idx);
}

static void sift_down(pair_queue *q, pair_rec *pairs, int64_t i) {
    int32_t idx = q->heap[i];
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= q->heap_n) break;
        if (child + 1 < q->heap_n && comes_first(q, pairs, q->heap[child + 1], q->heap[child]))
            child++;
        if (!comes_first(q, pairs, q->heap[child], idx)) break;
        heap_set(q, pairs, i, q->heap[child]);
        i = child;
    }
    heap_set(q, pairs, i, idx);
}

static int heap_reserve(pair_queue *q, int64_t extra) {
    int rc;
    int32_t *heap = reserve_array(q->heap, &q->heap_cap, q->heap_n + extra, 256, sizeof *heap,
                                  &rc);
    if (!heap) return rc;
    q->heap = heap;
    return BPE_OK;
}

/* The caller has reserved room. */
static void heap_push(pair_queue *q, pair_rec *pairs, int32_t idx) {
    q->heap[q->heap_n] = idx;
    sift_up(q, pairs, q->heap_n++);
}

static void heap_remove(pair_queue *q, pair_rec *pairs, int32_t idx) {
    int64_t i = pairs[idx].prev;
    int32_t last = q->heap[--q->heap_n];
    if (i == q->heap_n) return;
    heap_set(q, pairs, i, last);
    sift_up(q, pairs, i);
    sift_down(q, pairs, pairs[last].prev);
}

/* ---- buckets ---- */

static void bucket_push(pair_queue *q, pair_rec *pairs, int32_t idx, int64_t c) {
    pair_rec *p = &pairs[idx];
    p->prev = -1;
    p->next = q->bucket[c];
    if (p->next >= 0) pairs[p->next].prev = idx;
    q->bucket[c] = idx;
    if (c > q->bucket_max) q->bucket_max = c;
}

static void bucket_unlink(pair_queue *q, pair_rec *pairs, int32_t idx) {
    pair_rec *p = &pairs[idx];
    if (p->prev >= 0)
        pairs[p->prev].next = p->next;
    else
        q->bucket[p->filed] = p->next;
    if (p->next >= 0) pairs[p->next].prev = p->prev;
}

/* ---- public ---- */

int pair_queue_init(pair_queue *q, int64_t limit, const token_table *tokens) {
    memset(q, 0, sizeof *q);
    if (limit < 2) return BPE_EINVAL;
    if ((uint64_t)limit > SIZE_MAX / sizeof(int32_t)) return BPE_EOVERFLOW;
    q->bucket = malloc((size_t)limit * sizeof *q->bucket);
    if (!q->bucket) return BPE_ENOMEM;
    memset(q->bucket, 0xFF, (size_t)limit * sizeof *q->bucket); /* every bucket -1 */
    q->limit = limit;
    q->threshold = limit;
    q->tokens = tokens;
    return BPE_OK;
}

int pair_queue_update(pair_queue *q, pair_rec *pairs, int32_t idx) {
    pair_rec *p = &pairs[idx];
    int64_t n = p->count > 0 ? p->count : 0;
    if (p->filed == n) return BPE_OK;
    if (p->filed >= q->threshold) {
        if (n >= q->threshold) { /* stays in the heap: re-key in place */
            p->filed = n;
            sift_up(q, pairs, p->prev);
            sift_down(q, pairs, p->prev);
            return BPE_OK;
        }
        heap_remove(q, pairs, idx);
    } else if (p->filed > 0) {
        bucket_unlink(q, pairs, idx);
    }
    p->filed = n;
    if (n == 0) return BPE_OK;
    if (n >= q->threshold) {
        int rc = heap_reserve(q, 1);
        if (rc != BPE_OK) {
            p->filed = 0;
            return rc;
        }
        heap_push(q, pairs, idx);
        return BPE_OK;
    }
    bucket_push(q, pairs, idx, n);
    return BPE_OK;
}

int pair_queue_pop(pair_queue *q, pair_rec *pairs, int32_t *best) {
    if (q->heap_n == 0) {
        while (q->bucket_max > 0 && q->bucket[q->bucket_max] < 0) q->bucket_max--;
        if (q->bucket_max == 0) {
            *best = -1;
            return BPE_OK;
        }
        /* Move the top bucket into the heap whole; the heap orders its ties. */
        int64_t c = q->bucket_max, size = 0;
        for (int32_t idx = q->bucket[c]; idx >= 0; idx = pairs[idx].next) size++;
        int rc = heap_reserve(q, size);
        if (rc != BPE_OK) return rc;
        int32_t idx = q->bucket[c];
        q->bucket[c] = -1;
        q->threshold = c;
        q->bucket_max = c - 1;
        while (idx >= 0) {
            int32_t next = pairs[idx].next;
            heap_push(q, pairs, idx);
            idx = next;
        }
    }
    *best = q->heap[0];
    heap_remove(q, pairs, *best);
    pairs[*best].filed = 0;
    return BPE_OK;
}

void pair_queue_free(pair_queue *q) {
    free(q->bucket);
    free(q->heap);
    memset(q, 0, sizeof *q);
}
