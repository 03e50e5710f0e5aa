/* long_word.c - BPE of a word longer than SHORT_WORD bytes (encoder.h): a linked list of its
 * tokens and a heap of (rank, position) of its pairs, stale entries skipped when popped. */
#include <stdlib.h>

#include "encoder.h"

typedef struct {
    int32_t rank;
    int64_t pos;
} heap_item;

static int item_before(heap_item x, heap_item y) {
    return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos);
}

static void heap_push(heap_item *h, int64_t *n, heap_item it) {
    int64_t i = (*n)++;
    while (i > 0 && item_before(it, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = it;
}

static heap_item heap_pop(heap_item *h, int64_t *n) {
    heap_item top = h[0], last = h[--(*n)];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && item_before(h[c + 1], h[c])) c++;
        if (!item_before(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

int encode_long_word(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                       int64_t *n_ids) {
    int32_t *tok = malloc((size_t)n * sizeof *tok);
    int64_t *nxt = malloc((size_t)n * sizeof *nxt), *prv = malloc((size_t)n * sizeof *prv);
    /* Each merge pushes at most two pairs: n initial + 2n more bounds the heap. */
    heap_item *heap = malloc((size_t)(3 * n) * sizeof *heap);
    if (!tok || !nxt || !prv || !heap) {
        free(tok), free(nxt), free(prv), free(heap);
        return BPE_ENOMEM;
    }
    int64_t hn = 0;
    for (int64_t i = 0; i < n; i++) {
        tok[i] = e->byte_ids[w[i]];
        prv[i] = i - 1;
        nxt[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int64_t i = 0; i + 1 < n; i++) {
        int32_t r = e->byte_pair_rank[w[i] << 8 | w[i + 1]];
        if (r != NO_RANK) heap_push(heap, &hn, (heap_item){r, i});
    }
    while (hn > 0) {
        heap_item it = heap_pop(heap, &hn);
        int64_t p = it.pos, q = nxt[p];
        /* Stale if p was merged away (tok -1), has no right neighbour, or its pair changed:
         * ranks are unique per pair, so an equal rank means the same pair. */
        if (tok[p] < 0 || q < 0 || encoder_rank(e, tok[p], tok[q]) != it.rank) continue;
        tok[p] = e->merged[it.rank];
        tok[q] = -1;
        nxt[p] = nxt[q];
        if (nxt[p] >= 0) prv[nxt[p]] = p;
        if (prv[p] >= 0) {
            int32_t r = encoder_rank(e, tok[prv[p]], tok[p]);
            if (r != NO_RANK) heap_push(heap, &hn, (heap_item){r, prv[p]});
        }
        if (nxt[p] >= 0) {
            int32_t r = encoder_rank(e, tok[p], tok[nxt[p]]);
            if (r != NO_RANK) heap_push(heap, &hn, (heap_item){r, p});
        }
    }
    int64_t k = 0;
    for (int64_t i = 0; i >= 0 && i < n; i = nxt[i]) ids[k++] = tok[i];
    *n_ids = k;
    free(tok), free(nxt), free(prv), free(heap);
    return BPE_OK;
}

