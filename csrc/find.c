/* find.c - where special tokens occur in UTF-8 bytes, as a left-to-right search cuts the text:
 * at the leftmost place where one occurs, the longest that occurs there, then on after it (the
 * regex alternation of the specials, longest first, finds the same).
 *
 * Candidate places are the bytes some special starts with: found by memchr when every special
 * starts with the same byte (the usual case: <|endoftext|>, or a family of <|...|> tokens),
 * else by a table of first bytes. memcmp confirms a candidate, longest special first. A
 * candidate costs at most the lengths of the specials compared there, so text that nearly
 * repeats a very long special costs that length at each place (memcmp's speed: 90 ms per
 * 100 KB of text nearly repeating a 100 000-byte special, docs/performance.md). */
#include <string.h>

#include "bpe.h"

typedef struct {
    const uint8_t *needles;  /* special j is needles[offsets[j] .. offsets[j + 1]) */
    const int64_t *offsets;
    int64_t k;
    uint8_t starts_one[256]; /* whether some special starts with the byte */
    int only_first;          /* the byte every special starts with, or -1 */
} specials;

/* The first candidate place at or after i, or n. */
static int64_t next_candidate(const specials *s, const uint8_t *text, int64_t n, int64_t i) {
    if (s->only_first >= 0) {
        const uint8_t *c = i < n ? memchr(text + i, s->only_first, (size_t)(n - i)) : NULL;
        return c ? c - text : n;
    }
    while (i < n && !s->starts_one[text[i]]) i++;
    return i;
}

/* The longest special occurring at i (they are longest first), or -1. */
static int64_t special_at(const specials *s, const uint8_t *text, int64_t n, int64_t i) {
    for (int64_t j = 0; j < s->k; j++) {
        const uint8_t *needle = s->needles + s->offsets[j];
        int64_t m = s->offsets[j + 1] - s->offsets[j];
        if (m <= n - i && text[i] == needle[0] && memcmp(text + i, needle, (size_t)m) == 0)
            return j;
    }
    return -1;
}

int bpe_find_specials(const uint8_t *text, int64_t n, int64_t from, const uint8_t *needles,
                      const int64_t *offsets, int64_t k, int64_t *starts, int32_t *which,
                      int64_t cap, int64_t *n_found) {
    if (!n_found) return BPE_EINVAL;
    *n_found = 0;
    if ((n > 0 && !text) || !needles || !offsets || k < 1 || k > INT32_MAX || n < 0 ||
        from < 0 || cap < 0 || (cap > 0 && (!starts || !which)) || offsets[0] != 0)
        return BPE_EINVAL;
    specials s = {needles, offsets, k, {0}, -1};
    for (int64_t j = 0; j < k; j++) {
        int64_t m = offsets[j + 1] - offsets[j];
        if (m < 1 || (j > 0 && m > offsets[j] - offsets[j - 1])) return BPE_EINVAL;
        uint8_t first = needles[offsets[j]];
        s.starts_one[first] = 1;
        if (j == 0) s.only_first = first;
        else if (first != s.only_first) s.only_first = -1;
    }
    int64_t found = 0;
    for (int64_t i = from; found < cap;) {
        i = next_candidate(&s, text, n, i);
        if (i >= n) break;
        int64_t j = special_at(&s, text, n, i);
        if (j < 0) {
            i++;
            continue;
        }
        starts[found] = i;
        which[found++] = (int32_t)j;
        i += offsets[j + 1] - offsets[j];
    }
    *n_found = found;
    return BPE_OK;
}
