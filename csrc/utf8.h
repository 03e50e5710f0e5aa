/* utf8.h - decoding and validating UTF-8, and the whitespace of \s.
 *
 * Valid means what Python's str.decode("utf-8") accepts: no overlong forms, no surrogates, no
 * code points past U+10FFFF. Every scanner decodes through utf8_decode, so C and Python agree
 * on which texts are text. */
#ifndef UTF8_H
#define UTF8_H

#include <stdint.h>

/* utf8_decode for a lead byte of 0x80 or more that the inline cases below do not take: any
 * length, and every invalid sequence. */
int utf8_decode_slow(const uint8_t *t, int64_t n, int64_t i, uint32_t *cp);

/* Decodes the character at t[i] (i < n) into *cp; returns its length in bytes, or 0 if the
 * bytes there are not valid UTF-8. ASCII and well-formed two- and three-byte characters
 * (Cyrillic, Greek, CJK: most of what is not ASCII) are decoded inline. */
static inline int utf8_decode(const uint8_t *t, int64_t n, int64_t i, uint32_t *cp) {
    uint8_t b = t[i];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF && i + 1 < n && (t[i + 1] & 0xC0) == 0x80) {
        *cp = (uint32_t)(b & 0x1F) << 6 | (t[i + 1] & 0x3F);
        return 2; /* lead bytes from 0xC2 on cannot be overlong */
    }
    if (b >= 0xE0 && b <= 0xEF && i + 2 < n && (t[i + 1] & 0xC0) == 0x80 &&
        (t[i + 2] & 0xC0) == 0x80) {
        uint32_t c = (uint32_t)(b & 0x0F) << 12 | (uint32_t)(t[i + 1] & 0x3F) << 6 |
                     (t[i + 2] & 0x3F);
        if (c >= 0x800 && (c < 0xD800 || c > 0xDFFF)) { /* not overlong, not a surrogate */
            *cp = c;
            return 3;
        }
    }
    return utf8_decode_slow(t, n, i, cp);
}

/* Whether text[0 .. n) is valid UTF-8. */
int utf8_valid(const uint8_t *text, int64_t n);

/* Whether code point cp is in the regex module's \s: Unicode White_Space, 25 code points
 * (unlike str.isspace, U+001C-001F are not in it). A test checks this against regex on every
 * code point. */
static inline int utf8_is_space(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85) return 0;
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

#endif
