/* units.c - see units.h. */
#include "units.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/* Bit k of the result: p[k] is ASCII whitespace, for the 64 bytes at p. *high gets bit k set
 * when p[k] >= 0x80, a byte of some other character, which the caller decodes; *line_break
 * when p[k] is \r or \n. SSE2 where the compiler has it (every x86-64), else a byte loop. */
static inline uint64_t block_masks(const uint8_t *p, uint64_t *high, uint64_t *line_break) {
    uint64_t space = 0, top = 0, lb = 0;
#if defined(__SSE2__)
    const __m128i tab = _mm_set1_epi8(0x08), cr = _mm_set1_epi8(0x0E), sp = _mm_set1_epi8(0x20),
                  lf = _mm_set1_epi8(0x0A), ret = _mm_set1_epi8(0x0D);
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
        /* Signed compares: bytes >= 0x80 are negative, so never in 0x09-0x0D. */
        __m128i ctrl = _mm_and_si128(_mm_cmpgt_epi8(v, tab), _mm_cmplt_epi8(v, cr));
        __m128i is_space = _mm_or_si128(ctrl, _mm_cmpeq_epi8(v, sp));
        __m128i is_break = _mm_or_si128(_mm_cmpeq_epi8(v, lf), _mm_cmpeq_epi8(v, ret));
        space |= (uint64_t)(uint16_t)_mm_movemask_epi8(is_space) << (16 * k);
        top |= (uint64_t)(uint16_t)_mm_movemask_epi8(v) << (16 * k);
        lb |= (uint64_t)(uint16_t)_mm_movemask_epi8(is_break) << (16 * k);
    }
#else
    for (int k = 0; k < 64; k++) {
        space |= (uint64_t)(p[k] < 0x80 && utf8_is_space(p[k])) << k;
        top |= (uint64_t)(p[k] >> 7) << k;
        lb |= (uint64_t)(p[k] == '\n' || p[k] == '\r') << k;
    }
#endif
    *high = top;
    *line_break = lb;
    return space;
}

/* Whether the character that ends just before text[i] (0 < i) is a letter or a number. */
static int letter_or_number_before(const bpe_scanner *s, const uint8_t *text, int64_t n,
                                   int64_t i) {
    int64_t q = i - 1;
    while (q > 0 && i - q < 4 && (text[q] & 0xC0) == 0x80) q--; /* back to its first byte */
    uint8_t cls;
    scan_char(s->classes, text, n, q, &cls);
    return CLASS_BASE(cls) <= BASE_NUMBER;
}

void units_start(unit_cursor *c) {
    *c = (unit_cursor){.after_space = 1};
}

int units_next(const bpe_scanner *s, const uint8_t *text, int64_t n, unit_cursor *c,
               int64_t *ends, int64_t *n_ends) {
    int64_t k_out = 0;
    if (s->family == BPE_SCAN_PIECES) { /* the piece is one pre-token already */
        if (c->base == 0 && n > 0) {
            if (!utf8_valid(text, n)) return BPE_EUTF8;
            ends[k_out++] = n;
        }
        c->base = c->start = n;
        *n_ends = k_out;
        return BPE_OK;
    }
    const int line_rules = s->family != BPE_SCAN_GPT2; /* units.h: cl100k's and o200k's */
    /* In blocks of 64 bytes, whitespace is a bit mask (ASCII with SSE2, then each other
     * character decoded, which checks the UTF-8, and its bytes marked if it is whitespace),
     * and the cuts are read off it with count-trailing-zeros. The last block is copied and
     * padded with non-whitespace ASCII. The cursor carries from one block to the next whether
     * the byte before it is whitespace, a line break (after_space, after_break), and the
     * bytes of the block's last character that lie in the next block, if it is whitespace
     * (next_space), and all of them (next_cont). */
    uint8_t last[64];
    int64_t base = c->base;
    for (; base < n && k_out < UNITS_NEXT_MAX - 64; base += 64) {
        const uint8_t *block = text + base;
        uint64_t inside = ~(uint64_t)0; /* the bits of real bytes */
        if (n - base < 64) {
            memset(last, 'x', sizeof last);
            memcpy(last, block, (size_t)(n - base));
            block = last;
            inside = ((uint64_t)1 << (n - base)) - 1;
        }
        uint64_t high, line_break, space = block_masks(block, &high, &line_break);
        space |= c->next_space;
        high &= ~c->next_cont; /* checked with the character they belong to */
        c->next_space = c->next_cont = 0;
        while (high) {
            int k = ctz64(high);
            uint32_t cp;
            int len = utf8_decode(text, n, base + k, &cp);
            if (len == 0) return BPE_EUTF8;
            uint64_t bits = (((uint64_t)1 << len) - 1) << k; /* the part inside this block */
            if (k + len > 64) c->next_cont = ((uint64_t)1 << (k + len - 64)) - 1;
            if (utf8_is_space(cp)) space |= bits, c->next_space = c->next_cont;
            high &= ~bits;
        }
        uint64_t cuts = space & ~((space << 1) | c->after_space); /* whitespace after text */
        c->after_space = space >> 63;
        if (line_rules) {
            for (uint64_t risky = cuts & line_break; risky; risky &= risky - 1) {
                int k = ctz64(risky);
                if (!letter_or_number_before(s, text, n, base + k))
                    cuts &= ~((uint64_t)1 << k);
            }
            uint64_t after = ~space & ((line_break << 1) | c->after_break) & inside;
            if (s->family == BPE_SCAN_O200K) /* its punctuation takes a / after \r \n along */
                for (uint64_t slash = after; slash; slash &= slash - 1)
                    if (text[base + ctz64(slash)] == '/') after &= ~(slash & -slash);
            cuts |= after; /* after \r \n */
            c->after_break = line_break >> 63;
        }
        for (; cuts; cuts &= cuts - 1) {
            int64_t end = base + (int64_t)ctz64(cuts);
            if (end > c->start) ends[k_out++] = end; /* (a cut at 0 ends no unit) */
            c->start = end;
        }
    }
    c->base = base;
    if (base >= n && c->start < n) { /* the last unit runs to the end */
        ends[k_out++] = n;
        c->start = n;
    }
    *n_ends = k_out;
    return BPE_OK;
}

int units_add(word_table *t, word_batch *batch, const bpe_scanner *s, const uint8_t *text,
              int64_t n, int32_t *seq, int64_t *n_seq) {
    int64_t ends[UNITS_NEXT_MAX], n_ends, n_out = 0;
    unit_cursor c;
    units_start(&c);
    do {
        int64_t start = c.start;
        int rc = units_next(s, text, n, &c, ends, &n_ends);
        if (rc != BPE_OK) return rc;
        for (int64_t j = 0; j < n_ends; start = ends[j++]) {
            rc = word_batch_push(t, batch, word_key_of(text + start, ends[j] - start, n - start),
                                 1, seq ? &seq[n_out++] : NULL);
            if (rc != BPE_OK) return rc;
        }
    } while (n_ends > 0);
    if (n_seq) *n_seq = n_out;
    return BPE_OK;
}

#define SPLIT_AHEAD 16 /* units whose slot is prefetched ahead of the split */

int units_split(const word_table *units, const bpe_scanner *s, word_table *words,
                int32_t *piece_seq, int64_t *first_piece) {
    const word_table *t = units;
    int64_t *ends = malloc((size_t)word_table_longest(t) * sizeof *ends);
    if (!ends) return BPE_ENOMEM;
    word_batch batch = {.n = 0};
    int64_t n_pieces = 0, n = t->n;
    int rc = BPE_OK;
    /* Insertion order: frequent units come early, so frequent pre-tokens do too, and the
     * trainer lays words out in this order, where packing the hot ones together pays. */
    for (int64_t seq = 0; seq < n && rc == BPE_OK; seq++) {
        /* The units' slots are scattered over a large table: ask for them well ahead. */
        if (seq + SPLIT_AHEAD < n) word_table_prefetch_seq(t, seq + SPLIT_AHEAD);
        const word_slot *u = &t->slots[t->slot_of[seq]];
        const uint8_t *p = t->arena + t->start[seq];
        int64_t k = scan_split(s, p, u->len, ends);
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
    if (rc == BPE_OK && first_piece) first_piece[n] = n_pieces;
    free(ends);
    return rc;
}
