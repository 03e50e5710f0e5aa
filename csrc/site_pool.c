/* site_pool.c - see site_pool.h. */
#include "site_pool.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define CHUNK_POSITIONS ((int64_t)1 << 17) /* 1 MB */

int64_t site_pool_capacity(int64_t need) {
    int64_t cap = SITE_POOL_MIN;
    while (cap < need) {
        if (cap > INT64_MAX / 2) return -1;
        cap *= 2;
    }
    return cap;
}

/* The class of a capacity up to SITE_POOL_MAX. */
static int class_of(int64_t cap) {
    int c = 0;
    while ((SITE_POOL_MIN << c) < cap) c++;
    return c;
}

int64_t *site_pool_alloc(site_pool *p, int64_t cap) {
    if (cap > SITE_POOL_MAX) {
        int rc;
        return resize_array(NULL, cap, sizeof(int64_t), &rc);
    }
    int c = class_of(cap);
    int64_t *list = p->free_list[c];
    if (list) {
        memcpy(&p->free_list[c], list, sizeof list); /* the next free list of this class */
        return list;
    }
    if (p->bump_left < cap) { /* a new chunk; the old one's rest is left unused */
        int rc;
        void **chunks = reserve_array(p->chunks, &p->cap_chunks, p->n_chunks + 1, 16,
                                      sizeof *chunks, &rc);
        if (!chunks) return NULL;
        p->chunks = chunks;
        int64_t *chunk = malloc((size_t)CHUNK_POSITIONS * sizeof *chunk);
        if (!chunk) return NULL;
        p->chunks[p->n_chunks++] = chunk;
        p->bump = chunk;
        p->bump_left = CHUNK_POSITIONS;
    }
    list = p->bump;
    p->bump += cap;
    p->bump_left -= cap;
    return list;
}

void site_pool_release(site_pool *p, int64_t *list, int64_t cap) {
    if (cap > SITE_POOL_MAX) {
        free(list);
        return;
    }
    int c = class_of(cap);
    memcpy(list, &p->free_list[c], sizeof list);
    p->free_list[c] = list;
}

void site_pool_free(site_pool *p) {
    for (int64_t i = 0; i < p->n_chunks; i++) free(p->chunks[i]);
    free(p->chunks);
    memset(p, 0, sizeof *p);
}
