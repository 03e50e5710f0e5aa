/* find.c - where special tokens occur in UTF-8 bytes, as a left-to-right search cuts the text:
 * at the leftmost place where one occurs, the longest that occurs there, then on after it (the
 * regex alternation of the specials, longest first, finds the same).
 *
 * Candidate places are the bytes some special starts with: found by memchr when every special
 * starts with the same byte (the usual case: <|endoftext|>, or a family of <|...|> tokens),
 * else by a table of first bytes. A candidate whose first two bytes begin no special is passed
 * over at once; the others are confirmed by memcmp, longest special first. So a tokenizer with
 * Llama 3's 256 specials, all starting with <|, checks its specials one by one only where the
 * text holds <|, not at every < of HTML or code (2.6 MB of HTML: 143-160 ms before the second
 * byte was checked, 5.6-5.8 ms since; docs/performance.md). A candidate costs at most the
 * lengths of the specials compared there, so text that nearly repeats a very long special costs
 * that length at each place (memcmp's speed: 90 ms per 100 KB of text nearly repeating a
 * 100 000-byte special, docs/performance.md). */
#include <string.h>

#include "bpe.h"

typedef struct {
    const uint8_t *needles;  /* special j is needles[offsets[j] .. offsets[j + 1]) */
    const int64_t *offsets;
    int64_t k;
    uint8_t starts_one[256]; /* whether some special starts with the byte */
    int only_first;          /* the byte every special starts with, or -1 */
    /* Bit b of second[a]: some special starts with the bytes a, b, or is the byte a alone.
     * Filled at the first candidate (second_ready), only in the rows of first bytes: most
     * texts have no candidate, and a short one pays nothing for it. */
    int second_ready;
    uint64_t second[256][4];
} specials;

/* Fills s->second (see above). */
static void fill_second(specials *s) {
    for (int a = 0; a < 256; a++)
        if (s->starts_one[a]) memset(s->second[a], 0, sizeof s->second[a]);
    for (int64_t j = 0; j < s->k; j++) {
        const uint8_t *needle = s->needles + s->offsets[j];
        if (s->offsets[j + 1] - s->offsets[j] == 1) { /* followed by any byte */
            memset(s->second[needle[0]], 0xFF, sizeof s->second[needle[0]]);
            continue;
        }
        s->second[needle[0]][needle[1] >> 6] |= (uint64_t)1 << (needle[1] & 63);
    }
    s->second_ready = 1;
}

/* Whether a special may start at i, a candidate: its first two bytes begin one. */
static int may_start_at(specials *s, const uint8_t *text, int64_t n, int64_t i) {
    if (i + 1 >= n) return 1; /* the last byte: a special of one byte, checked by memcmp */
    if (!s->second_ready) fill_second(s);
    uint8_t b = text[i + 1];
    return (int)(s->second[text[i]][b >> 6] >> (b & 63)) & 1;
}

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
    specials s; /* not zeroed whole: fill_second clears the rows it uses */
    s.needles = needles;
    s.offsets = offsets;
    s.k = k;
    s.only_first = -1;
    s.second_ready = 0;
    memset(s.starts_one, 0, sizeof s.starts_one);
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
        int64_t j = may_start_at(&s, text, n, i) ? special_at(&s, text, n, i) : -1;
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
