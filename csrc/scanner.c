/* scanner.c - building a scanner, and the dispatch to its family (scan.h). */
#include <stdlib.h>
#include <string.h>

#include "scan.h"

int bpe_scanner_new(int family, int max_digits, int space_run_ends, const uint8_t *classes,
                    int64_t n_classes, bpe_scanner **out) {
    if (!out) return BPE_EINVAL;
    *out = NULL;
    if (family < BPE_SCAN_PIECES || family > BPE_SCAN_O200K || max_digits < 1 ||
        space_run_ends < 0 || space_run_ends > 1)
        return BPE_EINVAL;
    /* A table, even one a pieces scanner ignores, is read whole below: it must be whole. */
    if ((family != BPE_SCAN_PIECES && !classes) || (classes && n_classes != N_CODE_POINTS))
        return BPE_EINVAL;
    for (int64_t cp = 0; classes && cp < n_classes; cp++) {
        uint8_t c = classes[cp];
        int base = CLASS_BASE(c), letter_case = CLASS_CASE(c);
        if (CLASS_FOLD(c) > FOLD_R || (base == BASE_LETTER && letter_case > CASE_BOTH) ||
            (base == BASE_OTHER && letter_case > CASE_MARK) ||
            ((base == BASE_NUMBER || base == BASE_SPACE) && letter_case != 0))
            return BPE_EINVAL;
    }
    /* The units (units.c) take the ASCII whitespace for whitespace without the table, and the
     * scanners step over a space by its byte: a table that says otherwise would cut text
     * where no scanner moves on. */
    static const uint8_t ascii_space[] = {'\t', '\n', '\v', '\f', '\r', ' '};
    for (size_t k = 0; classes && k < sizeof ascii_space; k++)
        if (CLASS_BASE(classes[ascii_space[k]]) != BASE_SPACE) return BPE_EINVAL;
    bpe_scanner *s = calloc(1, sizeof *s);
    if (!s) return BPE_ENOMEM;
    if (family != BPE_SCAN_PIECES) { /* a pieces scanner reads no class */
        s->classes = malloc(N_CODE_POINTS);
        if (!s->classes) {
            free(s);
            return BPE_ENOMEM;
        }
        memcpy(s->classes, classes, N_CODE_POINTS);
    }
    s->family = family;
    s->max_digits = max_digits;
    s->space_run_ends = space_run_ends;
    *out = s;
    return BPE_OK;
}

void bpe_scanner_free(bpe_scanner *s) {
    if (!s) return;
    free(s->classes);
    free(s);
}

int64_t scan_split(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends) {
    if (n <= 0) return 0;
    switch (s->family) {
    case BPE_SCAN_GPT2:
        return scan_gpt2(s, text, n, ends);
    case BPE_SCAN_CL100K:
        return scan_cl100k(s, text, n, ends);
    case BPE_SCAN_O200K:
        return scan_o200k(s, text, n, ends);
    default: /* BPE_SCAN_PIECES: the caller's regex already made the text one pre-token */
        ends[0] = n;
        return 1;
    }
}

int bpe_scanner_split(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends,
                      int64_t cap, int64_t *n_ends) {
    if (!s || !n_ends || n < 0 || (n > 0 && (!text || !ends)) || cap < n) return BPE_EINVAL;
    *n_ends = 0;
    if (!utf8_valid(text, n)) return BPE_EUTF8;
    *n_ends = scan_split(s, text, n, ends);
    return BPE_OK;
}
