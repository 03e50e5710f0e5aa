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

/* The number of bytes of the eight in block that begin a character: not 10xxxxxx. Bit 7 of
 * each byte says so; the bits are moved to bit 0 and summed by one multiplication. (Not
 * __builtin_popcountll: without -mpopcnt, which a portable build cannot assume, it is a call
 * into libgcc: the byte offsets of realmix's 408 k lines took 17.5 against 12.3 ms.) */
static int begun_in(uint64_t block) {
    uint64_t starts = ((~block | (block << 1)) >> 7) & 0x0101010101010101ull;
    return (int)((starts * 0x0101010101010101ull) >> 56);
}

int bpe_utf8_char_offsets(const uint8_t *text, int64_t n, int64_t *offsets, int64_t k) {
    int64_t i = 0, chars = 0; /* byte i begins character number `chars` */
    for (int64_t j = 0; j < k; j++) {
        int64_t want = offsets[j];
        if (want < chars) return BPE_EINVAL;
        /* Eight bytes at a time while the character sought lies past them: each byte that
         * is not a continuation byte (10xxxxxx) begins a character. */
        while (i + 8 <= n) {
            uint64_t block;
            memcpy(&block, text + i, 8);
            int64_t begun = begun_in(block);
            if (chars + begun > want) break;
            /* The next byte may continue a character begun here: stop before it then. */
            if (i + 8 < n && (text[i + 8] & 0xC0) == 0x80) break;
            chars += begun, i += 8;
        }
        for (; i < n && (chars < want || (text[i] & 0xC0) == 0x80); i++)
            chars += (text[i] & 0xC0) != 0x80;
        if (chars != want) return BPE_EINVAL;
        offsets[j] = i;
    }
    return BPE_OK;
}

int bpe_utf8_split_at_nul(const uint8_t *text, int64_t n, int64_t *starts, int64_t *ends,
                          int64_t k) {
    if (k < 1 || n < 0 || (n > 0 && !text) || !starts || !ends) return BPE_EINVAL;
    int64_t at = 0;
    for (int64_t i = 0; i < k - 1; i++) {
        const uint8_t *nul = n > at ? memchr(text + at, 0, (size_t)(n - at)) : NULL;
        if (!nul) return BPE_EINVAL;
        starts[i] = at;
        ends[i] = nul - text;
        at = ends[i] + 1;
    }
    if (n > at && memchr(text + at, 0, (size_t)(n - at))) return BPE_EINVAL;
    starts[k - 1] = at;
    ends[k - 1] = n;
    return BPE_OK;
}

int bpe_is_whitespace(uint32_t cp) { return utf8_is_space(cp); }
