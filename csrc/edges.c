/* edges.c - a family's safe edges in UTF-8 text (bpe_next_edge), as the edge regexes of
 * bpe_cffi/patterns.py find them.
 *
 * Files, long texts and streams are cut at safe edges (chunking.py, csrc/units.h says why they
 * are safe). The regex module finds them at 0.3-1 us a byte where text holds whitespace but no
 * edge (o200k's "\n/" over and over: 3.4 s to plan 8 MB); each edge is a test of the bytes on
 * either side of it, which a loop does in a few nanoseconds a byte.
 *
 * Every family has the edge "text, then horizontal ASCII whitespace" (GPT-2: any ASCII
 * whitespace). "Text" before the edge is a character that is not whitespace: an ASCII one, or
 * the last byte of a longer one that is no whitespace character. cl100k and o200k add two
 * edges at line breaks: an ASCII letter or digit, then \r or \n; \r or \n, then a character
 * that is not whitespace (for o200k not '/' either, which its punctuation takes along). */
#include "bpe.h"

/* Whether text[i - len .. i) is one of the whitespace characters outside ASCII (U+0085,
 * U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), i >= len. */
static int space_ends_at(const uint8_t *t, int64_t i) {
    if (i >= 2 && t[i - 2] == 0xC2 && (t[i - 1] == 0x85 || t[i - 1] == 0xA0)) return 1;
    if (i < 3) return 0;
    uint8_t a = t[i - 3], b = t[i - 2], c = t[i - 1];
    if (a == 0xE1) return b == 0x9A && c == 0x80;
    if (a == 0xE2 && b == 0x80) return c <= 0x8A || c == 0xA8 || c == 0xA9 || c == 0xAF;
    if (a == 0xE2) return b == 0x81 && c == 0x9F;
    return a == 0xE3 && b == 0x80 && c == 0x80;
}

/* Whether text[i ..] starts one of those characters, reading no byte at or past limit. */
static int space_starts_at(const uint8_t *t, int64_t i, int64_t limit) {
    int64_t room = limit - i;
    if (room >= 2 && t[i] == 0xC2 && (t[i + 1] == 0x85 || t[i + 1] == 0xA0)) return 1;
    if (room < 3) return 0;
    uint8_t a = t[i], b = t[i + 1], c = t[i + 2];
    if (a == 0xE1) return b == 0x9A && c == 0x80;
    if (a == 0xE2 && b == 0x80) return c <= 0x8A || c == 0xA8 || c == 0xA9 || c == 0xAF;
    if (a == 0xE2) return b == 0x81 && c == 0x9F;
    return a == 0xE3 && b == 0x80 && c == 0x80;
}

static int is_ascii_space(uint8_t b) {
    return b == ' ' || (b >= 0x09 && b <= 0x0D);
}

/* The character that ends just before text[i] is not whitespace (i > 0). */
static int text_before(const uint8_t *t, int64_t i) {
    uint8_t b = t[i - 1];
    if (b < 0x80) return !is_ascii_space(b);
    return b <= 0xBF && !space_ends_at(t, i);
}

/* The character at text[i] is not whitespace (nor '/' when slash_is_not_text). */
static int text_at(const uint8_t *t, int64_t i, int64_t limit, int slash_is_not_text) {
    uint8_t b = t[i];
    if (b < 0x80) return !is_ascii_space(b) && !(slash_is_not_text && b == '/');
    return b >= 0xC2 && b <= 0xF4 && !space_starts_at(t, i, limit);
}

static int is_alnum(uint8_t b) {
    return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z');
}

static int is_edge(int family, const uint8_t *t, int64_t i, int64_t limit) {
    uint8_t b = t[i];
    if (family == BPE_SCAN_GPT2) return is_ascii_space(b) && text_before(t, i);
    if ((b == ' ' || b == '\t' || b == 0x0B || b == 0x0C) && text_before(t, i)) return 1;
    uint8_t before = t[i - 1];
    if (b == '\r' || b == '\n') return is_alnum(before);
    return (before == '\r' || before == '\n') &&
           text_at(t, i, limit, family == BPE_SCAN_O200K);
}

int bpe_next_edge(int family, const uint8_t *text, int64_t limit, int64_t lo, int64_t hi,
                  int64_t *at) {
    if (!at || limit < 0 || lo < 0 || hi > limit || (limit > 0 && !text)) return BPE_EINVAL;
    if (family != BPE_SCAN_GPT2 && family != BPE_SCAN_CL100K && family != BPE_SCAN_O200K)
        return BPE_EINVAL;
    *at = -1;
    for (int64_t i = lo > 0 ? lo : 1; i < hi; i++) {
        if (is_edge(family, text, i, limit)) {
            *at = i;
            break;
        }
    }
    return BPE_OK;
}
