/* utf8.c - see utf8.h. */
#include "utf8.h"

#include <string.h>

#include "bpe.h"

int utf8_decode_slow(const uint8_t *t, int64_t n, int64_t i, uint32_t *cp) {
    uint8_t b = t[i];
    int len;
    uint32_t min;
    if (b >= 0xC2 && b <= 0xDF) {
        len = 2, min = 0x80, *cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, min = 0x800, *cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, min = 0x10000, *cp = b & 0x07;
    } else {
        return 0;
    }
    if (i + len > n) return 0;
    for (int k = 1; k < len; k++) {
        if ((t[i + k] & 0xC0) != 0x80) return 0;
        *cp = (*cp << 6) | (t[i + k] & 0x3F);
    }
    if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) return 0;
    return len;
}

int utf8_valid(const uint8_t *text, int64_t n) {
    for (int64_t i = 0; i < n;) {
        if (i + 8 <= n) { /* eight ASCII bytes at a time */
            uint64_t block;
            memcpy(&block, text + i, 8);
            if (!(block & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        uint32_t cp;
        int len = utf8_decode(text, n, i, &cp);
        if (len == 0) return 0;
        i += len;
    }
    return 1;
}

int bpe_is_whitespace(uint32_t cp) { return utf8_is_space(cp); }
