/* units.c - see units.h. */
#include "units.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bpe.h"

/* Inline here (units_add asks about every non-ASCII character); bpe_is_whitespace exports it. */
static inline int is_whitespace(uint32_t cp) {
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

int bpe_is_whitespace(uint32_t cp) { return is_whitespace(cp); }

/* decode_utf8 for a lead byte of 0x80 or more (it decodes ASCII itself): any length, and
 * every invalid sequence. */
static int decode_utf8_any(const uint8_t *t, int64_t n, int64_t i, uint32_t *cp) {
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

/* Decodes the character at t[i]; returns its length in bytes, or 0 if invalid. ASCII and
 * well-formed two- and three-byte characters (Cyrillic, Greek, CJK: most of what is not
 * ASCII) are decoded inline; the rest, and every invalid sequence, by decode_utf8_any. */
static inline int decode_utf8(const uint8_t *t, int64_t n, int64_t i, uint32_t *cp) {
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
    return decode_utf8_any(t, n, i, cp); /* which also judges every invalid sequence */
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
        int len = decode_utf8(text, n, i, &cp);
        if (len == 0) return 0;
        i += len;
    }
    return 1;
}

/* ASCII whitespace per \s: \t \n \v \f \r and space. */
static inline int ascii_space(uint8_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }

int pieces_in_bounds(int64_t n, const int64_t *starts, const int64_t *ends, int64_t n_pieces) {
    for (int64_t p = 0; p < n_pieces; p++)
        if (starts[p] < 0 || ends[p] < starts[p] || ends[p] > n) return 0;
    return 1;
}

/* The index of the lowest set bit of x (not 0). */
static inline int ctz64(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    for (; !(x & 1); x >>= 1) k++;
    return k;
#endif
}

/* Bit k of the result: p[k] is ASCII whitespace, for the 64 bytes at p; *high gets bit k set
 * when p[k] >= 0x80, a byte of some other character, which the caller decodes. SSE2 where
 * the compiler has it (every x86-64), else a byte loop. */
static inline uint64_t ascii_space_mask(const uint8_t *p, uint64_t *high) {
    uint64_t space = 0, top = 0;
#if defined(__SSE2__)
    const __m128i tab = _mm_set1_epi8(0x08), cr = _mm_set1_epi8(0x0E), sp = _mm_set1_epi8(0x20);
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        /* Signed compares: bytes >= 0x80 are negative, so never in 0x09-0x0D. */
        __m128i ctrl = _mm_and_si128(_mm_cmpgt_epi8(v, tab), _mm_cmplt_epi8(v, cr));
        __m128i is_space = _mm_or_si128(ctrl, _mm_cmpeq_epi8(v, sp));
        space |= (uint64_t)(uint16_t)_mm_movemask_epi8(is_space) << (16 * k);
        top |= (uint64_t)(uint16_t)_mm_movemask_epi8(v) << (16 * k);
    }
#else
    for (int k = 0; k < 64; k++) {
        space |= (uint64_t)ascii_space(p[k]) << k;
        top |= (uint64_t)(p[k] >> 7) << k;
    }
#endif
    *high = top;
    return space;
}

int units_add(word_table *t, word_batch *batch, const uint8_t *text, int64_t n, int32_t *seq,
              int64_t *n_seq) {
    int64_t n_out = 0, start = 0; /* start: where the current unit began */
#define EMIT(end)                                                                               \
    do {                                                                                        \
        int64_t e_ = (end);                                                                     \
        int rc_ = word_batch_push(t, batch, word_key_of(text + start, e_ - start, n - start), 1, \
                                  seq ? &seq[n_out++] : NULL);                                  \
        if (rc_ != BPE_OK) return rc_;                                                          \
        start = e_;                                                                             \
    } while (0)
    /* A unit ends at every whitespace character that follows a non-whitespace one. In blocks
     * of 64 bytes, whitespace is a bit mask (ASCII with SSE2, then each other character
     * decoded, which checks the UTF-8, and its bytes marked if it is whitespace), and the ends
     * are read off it with count-trailing-zeros. The last block is copied and padded with
     * non-whitespace ASCII, which ends no unit. `after_space`: whether the byte before the
     * block counts as whitespace; `next_space`, `next_cont`: the bytes of the block's last
     * character that lie in the next block, if it is whitespace, and all of them. */
    uint8_t last[64];
    uint64_t after_space = 1, next_space = 0, next_cont = 0;
    for (int64_t base = 0; base < n; base += 64) {
        const uint8_t *block = text + base;
        if (n - base < 64) {
            memset(last, 'x', sizeof last);
            memcpy(last, block, (size_t)(n - base));
            block = last;
        }
        uint64_t high, space = ascii_space_mask(block, &high);
        space |= next_space;
        high &= ~next_cont; /* checked with the character they belong to */
        next_space = next_cont = 0;
        while (high) {
            int k = ctz64(high);
            uint32_t cp;
            int len = decode_utf8(text, n, base + k, &cp);
            if (len == 0) return BPE_EUTF8;
            uint64_t bits = (((uint64_t)1 << len) - 1) << k; /* the part inside this block */
            if (k + len > 64) next_cont = ((uint64_t)1 << (k + len - 64)) - 1;
            if (is_whitespace(cp)) space |= bits, next_space = next_cont;
            high &= ~bits;
        }
        uint64_t ends = space & ~((space << 1) | after_space);
        after_space = space >> 63;
        for (; ends; ends &= ends - 1) EMIT(base + (int64_t)ctz64(ends));
    }
    if (start < n) EMIT(n); /* the last unit runs to the end */
#undef EMIT
    if (n_seq) *n_seq = n_out;
    return BPE_OK;
}

/* ---- GPT-2's pattern ----
 * '(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * At each position the alternatives are tried in order and the first that matches wins, as in
 * the regex engine; the character classes come from the caller's table. */

/* Length and class of the character at t[i]. */
static inline int char_at(const uint8_t *t, int64_t n, int64_t i, const uint8_t *classes,
                          int *cls) {
    uint32_t cp;
    int len = decode_utf8(t, n, i, &cp);
    if (len == 0) {
        *cls = CLASS_OTHER;
        return 1;
    }
    *cls = classes[cp];
    return len;
}

static int64_t match_at(const uint8_t *t, int64_t n, int64_t i, const uint8_t *classes) {
    if (t[i] == '\'' && i + 1 < n) { /* '(?:[sdmt]|ll|ve|re) */
        uint8_t a = t[i + 1], b = i + 2 < n ? t[i + 2] : 0;
        if (a == 's' || a == 'd' || a == 'm' || a == 't') return i + 2;
        if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e'))
            return i + 3;
    }
    /*  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ : an optional space, then a run of one class */
    int64_t j = (t[i] == ' ' && i + 1 < n) ? i + 1 : i;
    int cls, c;
    int len = char_at(t, n, j, classes, &cls);
    if (cls != CLASS_SPACE) {
        for (j += len; j < n; j += len) {
            len = char_at(t, n, j, classes, &c);
            if (c != cls) break;
        }
        return j;
    }
    /* \s+(?!\S) : the whitespace run, less its last character if a non-space follows;
     * \s+ : a lone whitespace character before a non-space */
    int64_t k = i, last = i;
    while (k < n) {
        len = char_at(t, n, k, classes, &c);
        if (c != CLASS_SPACE) break;
        last = k;
        k += len;
    }
    if (k == n) return n;
    return last > i ? last : k;
}

int64_t bpe_gpt2_split(const uint8_t *text, int64_t n, const uint8_t *classes,
                       int64_t n_classes, int64_t *ends) {
    if (!text || !classes || !ends || n <= 0 || n_classes != N_CODE_POINTS) return 0;
    return gpt2_split(text, n, classes, ends);
}

int64_t gpt2_split(const uint8_t *t, int64_t n, const uint8_t *classes, int64_t *ends) {
    int64_t count = 0;
    for (int64_t i = 0; i < n;) {
        i = match_at(t, n, i, classes);
        ends[count++] = i;
    }
    return count;
}

#define SPLIT_AHEAD 16 /* units whose slot is prefetched ahead of the split */

int units_split(const word_table *units, const uint8_t *classes, word_table *words,
                int32_t *piece_seq, int64_t *first_piece) {
    const word_table *t = units;
    int64_t *ends = malloc((size_t)word_table_longest(t) * sizeof *ends);
    if (!ends) return BPE_ENOMEM;
    word_batch batch = {.n = 0};
    int64_t n_pieces = 0;
    int rc = BPE_OK;
    /* Insertion order: frequent units come early, so frequent pre-tokens do too, and the
     * trainer lays words out in this order, where packing the hot ones together pays. */
    for (int64_t seq = 0; seq < t->n && rc == BPE_OK; seq++) {
        /* The units' slots are scattered over a large table: ask for them well ahead. */
        if (seq + SPLIT_AHEAD < t->n) word_table_prefetch_seq(t, seq + SPLIT_AHEAD);
        const word_slot *u = &t->slots[t->slot_of[seq]];
        const uint8_t *p = t->arena + t->start[seq];
        int64_t k = gpt2_split(p, u->len, classes, ends);
        if (first_piece) first_piece[seq] = n_pieces;
        for (int64_t j = 0, from = 0; j < k && rc == BPE_OK; from = ends[j++]) {
            /* A unit that is one pre-token (a quarter of them) already has its key. */
            word_key key = k == 1 ? (word_key){p, u->len, u->head, u->tail, t->hash[seq]}
                                  : word_key_of(p + from, ends[j] - from,
                                                t->n_bytes - (t->start[seq] + from));
            rc = word_batch_push(words, &batch, key, u->count,
                                 piece_seq ? &piece_seq[n_pieces++] : NULL);
        }
    }
    if (rc == BPE_OK) rc = word_batch_flush(words, &batch);
    if (rc == BPE_OK && first_piece) first_piece[t->n] = n_pieces;
    free(ends);
    return rc;
}
