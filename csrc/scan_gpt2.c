/* scan_gpt2.c - GPT-2's pattern (r50k/p50k, and tiktoken's possessive form of it):
 *
 *     '(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * At each position the alternatives are tried in order and the first that matches wins, as in
 * the regex engine:
 * - a contraction: an apostrophe and s, d, m, t, ll, ve or re, lower case only;
 * - else an optional space (U+0020 only) and a run of one class: letters, numbers, or
 *   "other" (neither whitespace, letter nor number; marks are other here);
 * - else whitespace: the run up to the end of the text, or the run less its last character
 *   when something follows it (\s+(?!\S) backs off one character so that the last space can
 *   start the next word), or, for a run of one character before a non-space, that character.
 * tiktoken's form (\s++$ before \s+(?!\S), and \s last) gives the same pre-tokens: \s++$ takes
 * a run only where \s+(?!\S) takes it whole anyway, at the end of the text. */
#include "scan.h"

/* The end of the pre-token that starts at t[i]. */
static inline int64_t gpt2_next(const uint8_t *classes, const uint8_t *t, int64_t n, int64_t i) {
    if (t[i] == '\'' && i + 1 < n) {
        uint8_t a = t[i + 1], b = i + 2 < n ? t[i + 2] : 0;
        if (a == 's' || a == 'd' || a == 'm' || a == 't') return i + 2;
        if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e'))
            return i + 3;
    }
    int64_t j = (t[i] == ' ' && i + 1 < n) ? i + 1 : i;
    uint8_t cls;
    int len = scan_char(classes, t, n, j, &cls);
    int run = CLASS_BASE(cls);
    if (run != BASE_SPACE) return scan_run_end(classes, t, n, j + len, run); /* ` ?X+` */
    space_run r = scan_space_run(classes, t, n, i);
    if (r.end == n) return n;
    return r.last > i ? r.last : r.end;
}

int64_t scan_gpt2(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends) {
    int64_t count = 0;
    for (int64_t i = 0; i < n;) ends[count++] = i = gpt2_next(s->classes, text, n, i);
    return count;
}
