/* encode.c - the one way in to encoding: pieces of UTF-8 text to ids (bpe_encode).
 *
 * A call encodes pieces of one buffer (the text between special tokens, or the texts of a
 * batch), each followed by a special token's id or by nothing, and reports where each
 * piece's ids end. It picks one of three ways:
 *
 * - direct, for short inputs: the scanner splits each piece and each pre-token is encoded
 *   where it occurs. For a text of a few hundred bytes, finding its units costs more than it
 *   saves (realmix cut into texts, per call: 2.1 against 4.1 us at 50 characters, 11.9
 *   against 21.3 at 2 000);
 * - through the cache, from DIRECT_MAX_BYTES on: the pieces are cut into units (units.h) and
 *   each unit is looked up in the cache (unit_cache.h: kept from earlier calls) where it
 *   occurs; one the cache lacks is split and encoded there and then, and kept;
 * - distinct units, from DIRECT_MAX_BYTES on without a cache: the distinct units are counted
 *   in a table of the call's own, each is split once, each distinct pre-token of those is
 *   encoded once, and the ids of every occurrence are then copied from its unit (realmix:
 *   3.56 M units, 456 k distinct, holding 261 k distinct pre-tokens).
 *
 * All scratch memory belongs to the call: the encoder and the scanner are only read, and the
 * cache takes care of its own sharing, so calls may run at once on several threads. */
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "grow.h"
#include "scan.h"
#include "unit_cache.h"
#include "units.h"
#include "word_table.h"

#define DIRECT_MAX_BYTES (1 << 16)

/* ---- direct: each pre-token encoded where it occurs ---- */

/* Encodes valid UTF-8 text[0 .. n) at ids + *out; ends is scratch with room for n. */
static int encode_direct(const bpe_encoder *e, const bpe_scanner *s, const uint8_t *text,
                         int64_t n, int64_t *ends, int32_t *ids, int64_t *out) {
    int64_t n_words = scan_split(s, text, n, ends), from = 0;
    for (int64_t j = 0; j < n_words; from = ends[j++]) {
        const uint8_t *w = text + from;
        int64_t len = ends[j] - from, m;
        if (len == 1) {
            ids[(*out)++] = e->byte_ids[w[0]];
            continue;
        }
        word_key key = word_key_of(w, len, n - from);
        int rc = encoder_encode_word(e, &key, ids + *out, &m);
        if (rc != BPE_OK) return rc;
        *out += m;
    }
    return BPE_OK;
}

/* ---- units: each distinct unit encoded once ---- */

typedef struct {
    word_table distinct; /* the input's distinct units, in order of first occurrence */
    int32_t *seq;        /* seq[i]: the distinct unit at occurrence i; -1 - id: special id */
    int64_t n_seq;
    int64_t *piece_end;  /* piece_end[p]: n_seq once piece p and its special were scanned */
} units;

static void units_free(units *u) {
    word_table_free(&u->distinct);
    free(u->seq);
    free(u->piece_end);
}

/* Cuts the pieces into units (room: their bytes and specials) and numbers their occurrences. */
static int scan_units(const bpe_scanner *s, const uint8_t *text, const int64_t *starts,
                      const int64_t *ends, const int32_t *then_id, int64_t n_pieces,
                      int64_t room, units *u) {
    memset(u, 0, sizeof *u);
    /* The batch holds pointers into seq until it is flushed: take all the room at once. */
    int rc = word_table_init(&u->distinct, room);
    /* Sized once for about a distinct unit per 64 bytes (realmix: one per 60), rather than
     * doubled there through fresh blocks. */
    if (rc == BPE_OK) rc = word_table_reserve(&u->distinct, room / 64);
    if (rc == BPE_OK) u->seq = resize_array(NULL, room, sizeof *u->seq, &rc);
    if (rc == BPE_OK) u->piece_end = resize_array(NULL, n_pieces, sizeof *u->piece_end, &rc);
    word_batch batch = {.n = 0};
    for (int64_t p = 0; rc == BPE_OK && p < n_pieces; p++) {
        int64_t added = 0;
        rc = units_add(&u->distinct, &batch, s, text + starts[p], ends[p] - starts[p],
                       u->seq + u->n_seq, &added);
        u->n_seq += added;
        if (rc == BPE_OK && then_id[p] >= 0) u->seq[u->n_seq++] = -1 - then_id[p];
        u->piece_end[p] = u->n_seq;
    }
    if (rc == BPE_OK) rc = word_batch_flush(&u->distinct, &batch);
    return rc;
}

/* The ids of one distinct unit, as the output loop reads them: most units are one or two
 * tokens, kept inline so that loop reads one 8-byte entry per occurrence; longer ones point
 * into an arena. */
typedef struct {
    int32_t a, b; /* b >= 0: ids (a, b); b == -1: the id a; b == -2: see arena, start, end */
} unit_ids;

typedef struct {
    unit_ids *entry;      /* by distinct unit */
    int64_t *start, *end; /* entry d's ids are arena[start[d] .. end[d]) */
    int32_t *arena;
} unit_table;

static void unit_table_free(unit_table *ut) {
    free(ut->entry), free(ut->start), free(ut->end), free(ut->arena);
}

/* Sets unit d's entry once its ids lie in the arena at start[d] .. end[d]. */
static void unit_table_seal(unit_table *ut, int64_t d) {
    const int32_t *unit = ut->arena + ut->start[d];
    int64_t m = ut->end[d] - ut->start[d];
    ut->entry[d] = m == 1 ? (unit_ids){unit[0], -1}
                   : m == 2 && unit[1] >= 0 /* -1: a byte without a token */
                       ? (unit_ids){unit[0], unit[1]}
                       : (unit_ids){0, -2};
}

/* The ids of the distinct units of t, one after another in ut's arena. Most pre-tokens recur
 * across distinct units, so each distinct pre-token is encoded once too: the units are split
 * and their pieces numbered in a table, each piece is encoded, and each unit's ids are its
 * pieces' ids. */
static int encode_distinct(const bpe_encoder *e, const bpe_scanner *s, const word_table *t,
                           unit_table *ut) {
    memset(ut, 0, sizeof *ut);
    size_t n_units = (size_t)t->n;
    ut->entry = malloc(n_units * sizeof *ut->entry + 1);
    ut->start = malloc(n_units * sizeof *ut->start + 1);
    ut->end = malloc(n_units * sizeof *ut->end + 1);
    ut->arena = malloc((size_t)t->n_bytes * sizeof *ut->arena + 1); /* <= one id a byte */
    if (!ut->entry || !ut->start || !ut->end || !ut->arena) return BPE_ENOMEM;
    int64_t used = 0;
    word_table pieces;
    int rc = word_table_init(&pieces, t->n_bytes); /* a pre-token is at least a byte */
    if (rc != BPE_OK) return rc;
    rc = word_table_reserve(&pieces, t->n / 2); /* grown once at most, as a rule */
    int64_t *first_piece = malloc((size_t)(t->n + 1) * sizeof *first_piece);
    int32_t *piece_at = malloc((size_t)t->n_bytes * sizeof *piece_at + 1); /* <= one per byte */
    if (!first_piece || !piece_at) rc = BPE_ENOMEM;
    if (rc == BPE_OK)
        rc = units_split(t, s, &pieces, piece_at, first_piece);

    /* Each distinct piece's ids, back to back: at most one id per byte. */
    int64_t *piece_start = malloc((size_t)(pieces.n + 1) * sizeof *piece_start);
    int32_t *piece_ids = malloc((size_t)pieces.n_bytes * sizeof *piece_ids + 1);
    if (rc == BPE_OK && (!piece_start || !piece_ids)) rc = BPE_ENOMEM;
    int64_t n_piece_ids = 0;
    for (int64_t p = 0; rc == BPE_OK && p < pieces.n; p++) {
        int64_t m;
        piece_start[p] = n_piece_ids;
        rc = encoder_encode_entry(e, &pieces, p, piece_ids + n_piece_ids, &m);
        n_piece_ids += m;
    }
    if (rc == BPE_OK) piece_start[pieces.n] = n_piece_ids;
    word_table_free(&pieces);

    for (int64_t d = 0; rc == BPE_OK && d < t->n; d++) {
        ut->start[d] = used;
        for (int64_t j = first_piece[d]; j < first_piece[d + 1]; j++) {
            int32_t p = piece_at[j];
            int64_t m = piece_start[p + 1] - piece_start[p];
            memcpy(ut->arena + used, piece_ids + piece_start[p], (size_t)m * sizeof *ut->arena);
            used += m;
        }
        ut->end[d] = used;
        unit_table_seal(ut, d);
    }
    free(first_piece), free(piece_at), free(piece_start), free(piece_ids);
    return rc;
}

/* Writes at ids + *out the ids of one occurrence in a unit sequence: d is a distinct unit, or
 * -1 - id for a special token. */
static inline int write_occurrence(int32_t d, const unit_table *ut, int32_t *ids,
                                   int64_t out_cap, int64_t *out) {
    int64_t o = *out;
    if (o + 2 > out_cap) { /* rare: within two ids of the end, check exactly */
        int64_t m = d < 0 ? 1 : ut->end[d] - ut->start[d];
        if (o + m > out_cap) return BPE_EINVAL;
    }
    if (d < 0) {
        ids[o] = -1 - d;
        *out = o + 1;
        return BPE_OK;
    }
    unit_ids x = ut->entry[d];
    if (x.b >= -1) {
        /* One id or two, with no branch on which: units of one token and of two follow
         * each other in no pattern (realmix: 6.4 M ids from 3.56 M units), so such a branch
         * is often mispredicted. Both are written and one or two kept (a second that is no
         * id lies past the ids kept). At the very end of ids, the check above left only a
         * one-id unit. */
        ids[o] = x.a;
        if (o + 1 < out_cap) ids[o + 1] = x.b;
        *out = o + 1 + (x.b >= 0);
        return BPE_OK;
    }
    int64_t m = ut->end[d] - ut->start[d];
    if (o + m > out_cap) return BPE_EINVAL;
    memcpy(&ids[o], &ut->arena[ut->start[d]], (size_t)m * sizeof *ids);
    *out = o + m;
    return BPE_OK;
}

static int encode_units(const bpe_encoder *e, const bpe_scanner *s, const uint8_t *text,
                        const int64_t *starts, const int64_t *ends,
                        const int32_t *then_id, int64_t n_pieces, int64_t room, int32_t *ids,
                        int64_t out_cap, int64_t *n_out, int64_t *piece_ids_end) {
    units u;
    unit_table ut;
    int rc = scan_units(s, text, starts, ends, then_id, n_pieces, room, &u);
    if (rc == BPE_OK) rc = encode_distinct(e, s, &u.distinct, &ut);
    else memset(&ut, 0, sizeof ut);
    int64_t out = 0, i = 0;
    for (int64_t p = 0; rc == BPE_OK && p < n_pieces; p++) {
        for (; rc == BPE_OK && i < u.piece_end[p]; i++)
            rc = write_occurrence(u.seq[i], &ut, ids, out_cap, &out);
        if (piece_ids_end && rc == BPE_OK) piece_ids_end[p] = out;
    }
    units_free(&u);
    unit_table_free(&ut);
    *n_out = out;
    return rc;
}

/* ---- through the cache: each unit looked up where it occurs ---- */

/* Units are cut into a window, across as many pieces as fit, hashed, and their cache slots
 * asked for; then the window is encoded. Lookups soon after their prefetch find nothing yet
 * (a batch's documents are a few units each), so the window runs well ahead. */
#define WINDOW (2 * UNITS_NEXT_MAX)

typedef struct {
    word_key key[WINDOW];
    int64_t piece_end[WINDOW]; /* -1: key[j] is a unit; else piece piece_end[j] ends there */
    int64_t n;
} unit_window;

/* Where a call has got to. */
typedef struct {
    const bpe_encoder *e;
    const bpe_scanner *s;
    bpe_unit_cache *cache;
    int32_t *ids;
    int64_t out, lookups, hits;
    int64_t *word_ends, word_ends_cap; /* scan_split's scratch for units the cache lacks */
} cached_call;

/* Cuts units into w from piece *p, at *cursor, on: whole pieces while there is room. */
static int fill_window(cached_call *c, const uint8_t *text, const int64_t *starts,
                       const int64_t *ends, int64_t n_pieces, int64_t *p, unit_cursor *cursor,
                       unit_window *w) {
    int64_t unit_end[UNITS_NEXT_MAX], n_units;
    w->n = 0;
    while (*p < n_pieces && w->n + UNITS_NEXT_MAX < WINDOW) {
        const uint8_t *t = text + starts[*p];
        int64_t n = ends[*p] - starts[*p], from = cursor->start;
        int rc = units_next(c->s, t, n, cursor, unit_end, &n_units);
        if (rc != BPE_OK) return rc;
        for (int64_t j = 0; j < n_units; from = unit_end[j++]) {
            w->key[w->n] = word_key_of(t + from, unit_end[j] - from, n - from);
            unit_cache_prefetch(c->cache, &w->key[w->n]);
            w->piece_end[w->n++] = -1;
        }
        if (cursor->start >= n) { /* the piece is done */
            w->piece_end[w->n++] = (*p)++;
            units_start(cursor);
        }
    }
    return BPE_OK;
}

/* Writes the ids of the unit k at c->ids + c->out: the cache's, else split and encoded
 * (encode_direct) and then kept in the cache. */
static int encode_unit(cached_call *c, const word_key *k) {
    if (k->len == 1) {
        c->ids[c->out++] = c->e->byte_ids[k->ptr[0]];
        return BPE_OK;
    }
    c->lookups++;
    /* The lookup writes at most k->len ids (two for a unit of one or two ids), and ids has
     * room for one a byte of what is left of the input, this unit included. */
    int64_t m;
    if (unit_cache_find(c->cache, k, c->ids + c->out, &m)) {
        c->hits++;
        c->out += m;
        return BPE_OK;
    }
    int rc = BPE_OK;
    if (k->len > c->word_ends_cap) {
        int64_t *grown = resize_array(c->word_ends, k->len, sizeof *grown, &rc);
        if (!grown) return rc;
        c->word_ends = grown, c->word_ends_cap = k->len;
    }
    int64_t at = c->out;
    rc = encode_direct(c->e, c->s, k->ptr, k->len, c->word_ends, c->ids, &c->out);
    if (rc == BPE_OK) unit_cache_add(c->cache, k, c->ids + at, c->out - at);
    return rc;
}

/* Encodes pieces of text unit by unit through the cache, a window at a time. Room for the
 * ids: every unit has at most as many ids as bytes, which the caller's room allows for. */
static int encode_cached(const bpe_encoder *e, const bpe_scanner *s, bpe_unit_cache *cache,
                         const uint8_t *text, const int64_t *starts, const int64_t *ends,
                         const int32_t *then_id, int64_t n_pieces, int32_t *ids,
                         int64_t *n_out, int64_t *piece_ids_end) {
    cached_call c = {.e = e, .s = s, .cache = cache, .ids = ids};
    unit_window *w = malloc(sizeof *w);
    if (!w) return BPE_ENOMEM;
    unit_cursor cursor;
    units_start(&cursor);
    int64_t p = 0;
    int rc = BPE_OK;
    while (rc == BPE_OK && p < n_pieces) {
        rc = fill_window(&c, text, starts, ends, n_pieces, &p, &cursor, w);
        for (int64_t j = 0; rc == BPE_OK && j < w->n; j++) {
            int64_t ended = w->piece_end[j];
            if (ended < 0) {
                rc = encode_unit(&c, &w->key[j]);
                continue;
            }
            if (then_id[ended] >= 0) c.ids[c.out++] = then_id[ended];
            if (piece_ids_end) piece_ids_end[ended] = c.out;
        }
    }
    free(w);
    free(c.word_ends);
    unit_cache_tally(cache, c.lookups, c.hits);
    *n_out = c.out;
    return rc;
}

/* ---- the entry point ---- */

int bpe_encode(const bpe_encoder *e, const bpe_scanner *s, bpe_unit_cache *cache,
               const uint8_t *text, int64_t n,
               const int64_t *starts, const int64_t *ends, const int32_t *then_id,
               int64_t n_pieces, int32_t *ids, int64_t out_cap, int64_t *n_out,
               int64_t *piece_ids_end) {
    if (!e || !s || !n_out || n < 0 || n_pieces < 0 || (n > 0 && !text)) return BPE_EINVAL;
    *n_out = 0;
    const int64_t whole_start = 0, whole_end = n;
    const int32_t no_special = -1;
    if (!starts && !ends && !then_id && n_pieces == 1) /* the whole text, no special */
        starts = &whole_start, ends = &whole_end, then_id = &no_special;
    if (n_pieces > 0 && (!starts || !ends || !then_id)) return BPE_EINVAL;
    if (!pieces_in_bounds(n, starts, ends, n_pieces)) return BPE_EINVAL;
    int64_t bytes = 0, need = 0, longest = 0; /* ids: at most one a byte, and one a special */
    for (int64_t p = 0; p < n_pieces; p++) {
        if (then_id[p] < -1) return BPE_EINVAL;
        int64_t len = ends[p] - starts[p];
        if (len > INT64_MAX / 8 - need) return BPE_EOVERFLOW;
        bytes += len;
        need += len + (then_id[p] >= 0);
        if (len > longest) longest = len;
    }
    if (out_cap < need || (need > 0 && !ids)) return BPE_EINVAL;
    if (bytes >= DIRECT_MAX_BYTES && cache && cache->max_slots) /* (0: keeps nothing) */
        return encode_cached(e, s, cache, text, starts, ends, then_id, n_pieces, ids, n_out,
                             piece_ids_end);
    if (bytes >= DIRECT_MAX_BYTES)
        return encode_units(e, s, text, starts, ends, then_id, n_pieces, need, ids, out_cap,
                            n_out, piece_ids_end);

    for (int64_t p = 0; p < n_pieces; p++)
        if (!utf8_valid(text + starts[p], ends[p] - starts[p])) return BPE_EUTF8;
    int64_t *word_ends = malloc((size_t)longest * sizeof *word_ends + 1);
    if (!word_ends) return BPE_ENOMEM;
    int64_t out = 0;
    int rc = BPE_OK;
    for (int64_t p = 0; p < n_pieces && rc == BPE_OK; p++) {
        rc = encode_direct(e, s, text + starts[p], ends[p] - starts[p], word_ends, ids, &out);
        if (rc == BPE_OK && then_id[p] >= 0) ids[out++] = then_id[p];
        if (rc == BPE_OK && piece_ids_end) piece_ids_end[p] = out;
    }
    free(word_ends);
    *n_out = out;
    return rc;
}
