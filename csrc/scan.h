/* scan.h - pre-tokenization in C: a scanner per pattern family, exact with the regex module.
 *
 * A scanner splits valid UTF-8 text into pre-tokens exactly as regex.finditer(pattern, text)
 * does for its family's pattern strings (patterns.py recognises them). Each family's cut
 * rules are explained above its code (scan_gpt2.c, scan_cl100k.c, scan_o200k.c). The
 * character classes come from a table of one byte per code point that the Python side
 * computes with the regex module itself, so C and regex agree on the Unicode version.
 *
 * A scanner is immutable once built: one may serve several threads at once. */
#ifndef SCAN_H
#define SCAN_H

#include <stdint.h>

#include "bpe.h"
#include "utf8.h"

/* A code point's class byte. Its low two bits are the class that GPT-2's and cl100k's
 * patterns see (one AND per character); the next two tell o200k's case classes apart; the
 * top four are the letter it matches case-insensitively among the contractions' letters
 * s d m t l v e r (1-8; 0: none). The classes partition the code points (a test checks each
 * against regex on all of them). */
enum {
    BASE_LETTER = 0, /* \p{L} */
    BASE_NUMBER = 1, /* \p{N} */
    BASE_SPACE = 2,  /* \s */
    BASE_OTHER = 3   /* none of them: punctuation, symbols, controls, marks */
};
enum {
    CASE_UPPER = 0 << 2, /* a letter of \p{Lu} or \p{Lt} */
    CASE_LOWER = 1 << 2, /* a letter of \p{Ll} */
    CASE_BOTH = 2 << 2,  /* a letter of \p{Lm} or \p{Lo}: in both of o200k's case classes */
    CASE_MARK = 1 << 2   /* an "other" of \p{M}: in both of o200k's case classes too */
};
#define CLASS_BASE(c) ((c) & 3)
#define CLASS_CASE(c) ((c) & 12)
#define CLASS_FOLD(c) ((c) >> 4)
enum { FOLD_S = 1, FOLD_D, FOLD_M, FOLD_T, FOLD_L, FOLD_V, FOLD_E, FOLD_R };
#define N_CODE_POINTS 0x110000

struct bpe_scanner {
    int family;         /* BPE_SCAN_* */
    int max_digits;     /* cl100k family: digits per pre-token (\p{N}{1,max_digits}) */
    int space_run_ends; /* cl100k family: the tiktoken form's \s++$ alternative */
    uint8_t *classes;   /* N_CODE_POINTS class bytes, owned */
};

/* The length of the character at t[i] (i < n) and its class byte. Bytes that are not valid
 * UTF-8 are read one at a time as BASE_OTHER (never out of bounds), though callers pass valid
 * text. */
static inline int scan_char(const uint8_t *classes, const uint8_t *t, int64_t n, int64_t i,
                            uint8_t *cls) {
    uint32_t cp;
    int len = utf8_decode(t, n, i, &cp);
    if (len == 0) {
        *cls = BASE_OTHER;
        return 1;
    }
    *cls = classes[cp];
    return len;
}

/* The end of the run of characters of base class `base` from t[j]. ASCII, most of most text,
 * is read from the class table without decoding. */
static inline int64_t scan_run_end(const uint8_t *classes, const uint8_t *t, int64_t n,
                                   int64_t j, int base) {
    while (j < n) {
        uint8_t cls;
        int len = t[j] < 0x80 ? (cls = classes[t[j]], 1) : scan_char(classes, t, n, j, &cls);
        if (CLASS_BASE(cls) != base) break;
        j += len;
    }
    return j;
}

/* The end of a contraction at t[i] -- an apostrophe, then a character that matches s, d, m or
 * t without case, or two that match ll, ve or re (as regex has it: the long s, U+017F, is an
 * s) -- or -1 (cl100k's and o200k's families). */
static inline int64_t scan_contraction_end(const uint8_t *classes, const uint8_t *t,
                                           int64_t n, int64_t i) {
    if (i + 1 >= n || t[i] != '\'') return -1; /* (i may be n: a word that ends the text) */
    uint8_t c1, c2;
    int64_t j = i + 1 + scan_char(classes, t, n, i + 1, &c1);
    int f1 = CLASS_FOLD(c1);
    if (f1 == FOLD_S || f1 == FOLD_D || f1 == FOLD_M || f1 == FOLD_T) return j;
    if (j >= n || (f1 != FOLD_L && f1 != FOLD_V && f1 != FOLD_R)) return -1;
    int64_t k = j + scan_char(classes, t, n, j, &c2);
    int f2 = CLASS_FOLD(c2);
    if ((f1 == FOLD_L && f2 == FOLD_L) || (f1 != FOLD_L && f2 == FOLD_E)) return k;
    return -1;
}

/* The end of at most max_digits numbers from t[i], a number that ends at j (\p{N}{1,3} and
 * the like: cl100k's and o200k's families). */
static inline int64_t scan_digits_end(const uint8_t *classes, const uint8_t *t, int64_t n,
                                      int64_t j, int max_digits) {
    for (int digits = 1; digits < max_digits && j < n; digits++) {
        uint8_t c;
        int len = scan_char(classes, t, n, j, &c);
        if (CLASS_BASE(c) != BASE_NUMBER) break;
        j += len;
    }
    return j;
}

/* The end of ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with slash: `[\r\n/]*`, o200k's) from t[i], whose
 * first character ends at j and is of base class base; -1 if it does not match there. */
static inline int64_t scan_punctuation_end(const uint8_t *classes, const uint8_t *t, int64_t n,
                                           int64_t i, int64_t j, int base, int slash) {
    int64_t p = i;
    if (t[i] == ' ' && j < n) {
        uint8_t c1;
        scan_char(classes, t, n, j, &c1);
        if (CLASS_BASE(c1) == BASE_OTHER) p = j, base = BASE_OTHER;
    }
    if (base != BASE_OTHER) return -1;
    uint8_t c;
    p = scan_run_end(classes, t, n, p + scan_char(classes, t, n, p, &c), BASE_OTHER);
    while (p < n && (t[p] == '\r' || t[p] == '\n' || (slash && t[p] == '/'))) p++;
    return p;
}

/* A run of whitespace from t[i]: its end, where its last character starts, and the end of its
 * last \r or \n (i if none). */
typedef struct {
    int64_t end, last, line_end;
} space_run;

static inline space_run scan_space_run(const uint8_t *classes, const uint8_t *t, int64_t n,
                                       int64_t i) {
    space_run r = {i, i, i};
    while (r.end < n) {
        uint8_t cls;
        int len = scan_char(classes, t, n, r.end, &cls);
        if (CLASS_BASE(cls) != BASE_SPACE) break;
        if (t[r.end] == '\r' || t[r.end] == '\n') r.line_end = r.end + 1;
        r.last = r.end;
        r.end += len;
    }
    return r;
}

/* Splits valid UTF-8 text[0 .. n) into the family's pre-tokens: writes the end of each to
 * ends (room for n: a pre-token holds at least one byte) and returns their number. With
 * BPE_SCAN_PIECES the text is one pre-token. */
int64_t scan_split(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends);

/* The family scanners scan_split dispatches to (same contract). */
int64_t scan_gpt2(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends);
int64_t scan_cl100k(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends);
int64_t scan_o200k(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends);

#endif
