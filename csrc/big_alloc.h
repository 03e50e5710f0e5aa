/* big_alloc.h - allocations for large, randomly accessed tables (hash slots).
 *
 * A hash table of tens of megabytes is probed at random, so with 4 KB pages nearly every
 * probe also misses the TLB. On Linux, when the table is large, we align it to 2 MB and ask
 * for transparent huge pages (a hint: if the kernel says no, nothing changes but speed).
 * Memory from big_alloc is released with plain free(). */
#ifndef BIG_ALLOC_H
#define BIG_ALLOC_H

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#define BIG_ALLOC_PAGE ((size_t)2 << 20)

/* The size of the block big_alloc(bytes) gives: bytes, or for a large table the whole 2 MB
 * pages it is rounded up to. */
static inline size_t big_alloc_size(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 2 * BIG_ALLOC_PAGE)
        return (bytes + BIG_ALLOC_PAGE - 1) / BIG_ALLOC_PAGE * BIG_ALLOC_PAGE;
#endif
    return bytes;
}

/* Asks for huge pages for [p, p + bytes), p on a BIG_ALLOC_PAGE boundary (only a hint:
 * failure is harmless). */
static inline void big_advise(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 2 * BIG_ALLOC_PAGE) madvise(p, bytes, MADV_HUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}

/* Asks for no huge pages for [p, p + bytes), p on a BIG_ALLOC_PAGE boundary: a table that
 * should be resident only as far as it is touched, where the system puts every large block
 * on huge pages. */
static inline void big_advise_against(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_NOHUGEPAGE)
    madvise(p, bytes, MADV_NOHUGEPAGE);
#else
    (void)p, (void)bytes;
#endif
}

/* malloc(bytes) for a table; NULL if that fails. */
static inline void *big_alloc(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes >= 2 * BIG_ALLOC_PAGE) {
        size_t rounded = big_alloc_size(bytes);
        void *p = aligned_alloc(BIG_ALLOC_PAGE, rounded);
        if (p) big_advise(p, rounded);
        return p;
    }
#endif
    return malloc(bytes ? bytes : 1);
}

#endif
