/* find.c - occurrences of one special token in UTF-8 bytes (the usual case: a single
 * <|endoftext|> between documents). memchr finds candidates for the first byte, which is
 * rare in text for the usual delimiters, and memcmp confirms them. */
#include <string.h>

#include "bpe.h"

/* The start of the first occurrence of needle[0 .. m) (m >= 1) in text[from .. n), or -1. */
static int64_t find_next(const uint8_t *text, int64_t n, int64_t from, const uint8_t *needle,
                           int64_t m) {
    for (int64_t i = from; i <= n - m;) {
        const uint8_t *c = memchr(text + i, needle[0], (size_t)(n - m + 1 - i));
        if (!c) break;
        i = c - text;
        if (memcmp(c + 1, needle + 1, (size_t)(m - 1)) == 0) return i;
        i++;
    }
    return -1;
}

int bpe_find_all(const uint8_t *text, int64_t n, int64_t from, const uint8_t *needle,
                 int64_t m, int64_t *out, int64_t cap, int64_t *n_found) {
    if (!n_found) return BPE_EINVAL;
    *n_found = 0;
    if ((n > 0 && !text) || !needle || (cap > 0 && !out) || n < 0 || m < 1 || from < 0 ||
        cap < 0)
        return BPE_EINVAL;
    int64_t found = 0;
    for (int64_t i = from; found < cap;) {
        int64_t at = find_next(text, n, i, needle, m);
        if (at < 0) break;
        out[found++] = at;
        i = at + m; /* non-overlapping, as a left-to-right search cuts the text */
    }
    *n_found = found;
    return BPE_OK;
}
