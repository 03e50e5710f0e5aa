/* long_word.c - BPE of a word longer than SHORT_WORD bytes (encoder.h): a linked list of its
 * tokens and a heap of (rank, position) of its pairs, stale entries skipped when popped.
 *
 * Memory is what bounds the length of a word, so everything is as small as it can be: the
 * tokens live in the caller's ids (room for one per byte), the links and heap entries are
 * 32-bit, and the heap grows as pairs are pushed. A word of n bytes takes 8n bytes of links
 * plus 8 bytes per live heap entry (8n to 24n), against 36n-68n with 64-bit positions and a
 * separate token array. Words of 2**31 bytes or more are refused with BPE_EOVERFLOW. */
#include <stdint.h>
#include <stdlib.h>

#include "encoder.h"
#include "grow.h"

typedef struct {
    int32_t rank, pos;
} heap_item;

typedef struct {
    heap_item *item;
    int64_t n, cap;
} pair_heap;

static int item_before(heap_item x, heap_item y) {
    return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos);
}

static int heap_push(pair_heap *h, heap_item it) {
    if (h->n == h->cap) {
        int rc = BPE_OK;
        heap_item *grown = reserve_array(h->item, &h->cap, h->n + 1, 1024, sizeof *grown, &rc);
        if (!grown) return rc;
        h->item = grown;
    }
    int64_t i = h->n++;
    while (i > 0 && item_before(it, h->item[(i - 1) / 2])) {
        h->item[i] = h->item[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->item[i] = it;
    return BPE_OK;
}

static heap_item heap_pop(pair_heap *h) {
    heap_item *a = h->item, top = a[0], last = a[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && item_before(a[c + 1], a[c])) c++;
        if (!item_before(a[c], last)) break;
        a[i] = a[c];
        i = c;
    }
    if (h->n > 0) a[i] = last;
    return top;
}

/* Pushes the pair at p (tok[p], tok[q]) if it has a rank. */
static int push_pair(const bpe_encoder *e, pair_heap *h, const int32_t *tok, int32_t p,
                     int32_t q) {
    int32_t r = encoder_rank(e, tok[p], tok[q]);
    return r == NO_RANK ? BPE_OK : heap_push(h, (heap_item){r, p});
}

int encode_long_word(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                     int64_t *n_ids) {
    if (n >= INT32_MAX) return BPE_EOVERFLOW;
    int32_t *tok = ids; /* tok[i]: the token starting at byte i, -1 once merged away */
    int32_t *nxt = malloc((size_t)n * sizeof *nxt), *prv = malloc((size_t)n * sizeof *prv);
    pair_heap heap = {NULL, 0, 0};
    int rc = nxt && prv ? BPE_OK : BPE_ENOMEM;
    for (int32_t i = 0; rc == BPE_OK && i < n; i++) {
        tok[i] = e->byte_ids[w[i]];
        prv[i] = i - 1;
        nxt[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int32_t i = 0; rc == BPE_OK && i + 1 < n; i++) {
        int32_t r = e->byte_pair_rank[w[i] << 8 | w[i + 1]];
        if (r != NO_RANK) rc = heap_push(&heap, (heap_item){r, i});
    }
    while (rc == BPE_OK && heap.n > 0) {
        heap_item it = heap_pop(&heap);
        int32_t p = it.pos, q = nxt[p];
        /* Stale if p was merged away (tok -1), has no right neighbour, or its pair changed:
         * ranks are unique per pair, so an equal rank means the same pair. */
        if (tok[p] < 0 || q < 0 || encoder_rank(e, tok[p], tok[q]) != it.rank) continue;
        tok[p] = e->merged[it.rank];
        tok[q] = -1;
        nxt[p] = nxt[q];
        if (nxt[p] >= 0) prv[nxt[p]] = p;
        if (prv[p] >= 0) rc = push_pair(e, &heap, tok, prv[p], p);
        if (rc == BPE_OK && nxt[p] >= 0) rc = push_pair(e, &heap, tok, p, nxt[p]);
    }
    /* The surviving tokens, moved to the front in order: each is read before it is written
     * over, since k <= i. */
    int64_t k = 0;
    for (int32_t i = 0; rc == BPE_OK && i >= 0; i = nxt[i]) ids[k++] = tok[i];
    *n_ids = rc == BPE_OK ? k : 0;
    free(nxt), free(prv), free(heap.item);
    return rc;
}
