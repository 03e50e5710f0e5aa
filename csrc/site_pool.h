/* site_pool.h - the trainer's allocator for site lists (a pair's positions).
 *
 * A training run grows and drops hundreds of thousands of small lists; with malloc, realloc
 * and free for each, the allocator took about a seventh of the merge phase, and freeing the
 * lists at the end another 0.03 s. Lists here have power-of-two capacities from
 * SITE_POOL_MIN; up to SITE_POOL_MAX they are cut from large chunks and recycled through one
 * free list per capacity, larger ones are plain malloc. Freeing the pool frees every chunk,
 * so only the few large lists need freeing one by one. */
#ifndef SITE_POOL_H
#define SITE_POOL_H

#include <stdint.h>

#define SITE_POOL_MIN 4
#define SITE_POOL_CLASSES 11 /* capacities 4, 8, ..., 4096 */
#define SITE_POOL_MAX (SITE_POOL_MIN << (SITE_POOL_CLASSES - 1))

typedef struct {
    int64_t *free_list[SITE_POOL_CLASSES]; /* a free list's first slot links to the next */
    int64_t *bump;                         /* the unused rest of the newest chunk */
    int64_t bump_left;
    void **chunks;
    int64_t n_chunks, cap_chunks;
} site_pool;

/* The capacity a list of `need` positions gets: a power of two, at least SITE_POOL_MIN; -1 if
 * that overflows. */
int64_t site_pool_capacity(int64_t need);
/* Room for cap positions (cap from site_pool_capacity), or NULL if out of memory. */
int64_t *site_pool_alloc(site_pool *p, int64_t cap);
/* Gives back a list from site_pool_alloc with the same cap. */
void site_pool_release(site_pool *p, int64_t *list, int64_t cap);
/* Frees the chunks; lists above SITE_POOL_MAX must have been released (or freed) first. */
void site_pool_free(site_pool *p);

#endif
