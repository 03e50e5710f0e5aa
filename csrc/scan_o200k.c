/* scan_o200k.c - GPT-4o's pattern (tiktoken's o200k_base):
 *
 *     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
 *         (?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
 *         (?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *     \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * (one line, cut here after each alternative's letters)
 *
 * Words are cut where the case changes: call U the first class (upper case, and the letters and
 * marks that have no case) and L the second (lower case, and the same caseless ones); a
 * caseless letter or a mark ("both") is in each. Nothing here is possessive, so the regex
 * backtracks, and the scanner follows it exactly:
 *
 * - U*L+ (first alternative) from p: U* takes the longest run of U. If the character after it
 *   is lower case, L+ runs on from there ("Hello", "HTTPServer" -> "HTTPS", "erver"). Else U*
 *   gives back characters until L+ can start: at the last "both" of the run, which is then the
 *   word's end ("日本" is one word, its last character the L+). No "both" in it: no match.
 * - U+L* (second alternative): a run of U, then any L ("HELLO", "ABC").
 * - Either may start with one character that is neither \r, \n, a letter nor a number: tried
 *   with it first, then without. Only a mark can start the words either way: it is such a
 *   character and in both U and L (" \u0301" then "A" gives "\u0301" as a word by the first
 *   alternative without the prefix, since with it the letters fail).
 * - Either may end with a contraction, matched without case ("don't", "HE'LL").
 * - 1 to 3 numbers; punctuation after an optional space, then every \r, \n and / that follows
 *   ("./\n/"); whitespace up to the last \r or \n of its run; whitespace less its last
 *   character before text; one whitespace character. */
#include "scan.h"

/* Whether a class is in U (the first case class), in L (the second). */
static inline int in_upper(uint8_t c) {
    return CLASS_BASE(c) == BASE_LETTER ? CLASS_CASE(c) != CASE_LOWER
                                        : CLASS_BASE(c) == BASE_OTHER && CLASS_CASE(c) == CASE_MARK;
}
static inline int in_lower(uint8_t c) {
    return CLASS_BASE(c) == BASE_LETTER ? CLASS_CASE(c) != CASE_UPPER
                                        : CLASS_BASE(c) == BASE_OTHER && CLASS_CASE(c) == CASE_MARK;
}

/* The end of the run of L from t[j]. */
static int64_t lower_run_end(const uint8_t *classes, const uint8_t *t, int64_t n, int64_t j) {
    while (j < n) {
        uint8_t c;
        int len = scan_char(classes, t, n, j, &c);
        if (!in_lower(c)) break;
        j += len;
    }
    return j;
}

/* U*L+ from t[p] (the first alternative's letters): their end, or -1. */
static int64_t upper_then_lower(const uint8_t *classes, const uint8_t *t, int64_t n, int64_t p) {
    int64_t q = p, both_end = -1; /* the end of the last "both" of the U run */
    uint8_t c = 0;
    while (q < n) {
        int len = scan_char(classes, t, n, q, &c);
        if (!in_upper(c)) break;
        q += len;
        if (in_lower(c)) both_end = q;
    }
    if (q < n && in_lower(c)) return lower_run_end(classes, t, n, q); /* lower case after U* */
    return both_end;
}

/* U+L* from t[p] (the second alternative's letters): their end, or -1. */
static int64_t upper_and_lower(const uint8_t *classes, const uint8_t *t, int64_t n, int64_t p) {
    int64_t q = p;
    while (q < n) {
        uint8_t c;
        int len = scan_char(classes, t, n, q, &c);
        if (!in_upper(c)) break;
        q += len;
    }
    return q > p ? lower_run_end(classes, t, n, q) : -1;
}

/* The end of the pre-token that starts at t[i]. */
static inline int64_t o200k_next(const uint8_t *classes, const uint8_t *t, int64_t n, int64_t i) {
    uint8_t c0;
    int64_t j = i + scan_char(classes, t, n, i, &c0);
    int base = CLASS_BASE(c0);
    /* [^\r\n\p{L}\p{N}]? before the letters: a space, punctuation or a mark */
    int prefix = (base == BASE_SPACE || base == BASE_OTHER) && t[i] != '\r' && t[i] != '\n';
    int64_t end = -1;
    if (prefix) end = upper_then_lower(classes, t, n, j);
    if (end < 0) end = upper_then_lower(classes, t, n, i);
    if (end < 0 && prefix) end = upper_and_lower(classes, t, n, j);
    if (end < 0) end = upper_and_lower(classes, t, n, i);
    if (end >= 0) { /* and the contraction that may follow ('s 't 're 've 'm 'll 'd) */
        int64_t k = scan_contraction_end(classes, t, n, end);
        return k >= 0 ? k : end;
    }
    if (base == BASE_NUMBER) return scan_digits_end(classes, t, n, j, 3); /* \p{N}{1,3} */
    end = scan_punctuation_end(classes, t, n, i, j, base, 1); /*  ?[^\s\p{L}\p{N}]+[\r\n/]* */
    if (end >= 0) return end;
    space_run r = scan_space_run(classes, t, n, i); /* whitespace */
    if (r.line_end > i) return r.line_end;          /* \s*[\r\n]+ */
    if (r.end == n) return n;                       /* \s+(?!\S) */
    return r.last > i ? r.last : r.end;             /* \s+(?!\S), else \s+ */
}

int64_t scan_o200k(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends) {
    int64_t count = 0;
    for (int64_t i = 0; i < n;) ends[count++] = i = o200k_next(s->classes, text, n, i);
    return count;
}
