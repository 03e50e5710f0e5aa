/* encode.c - applying learned merges to pre-tokens (SPEC 2.3).
 *
 * Within a word, the adjacent pair whose merge was learned earliest is merged first; among
 * equal pairs the leftmost goes first, which is the left-to-right, non-overlapping rule of
 * training. Short words (almost all of them) use a flat array and rescan for the lowest rank,
 * as tiktoken does; long ones use a heap so a 20 MB pre-token is O(n log n), not O(n^2).
 *
 * A word whose bytes are a token's, and encode to that token, is one lookup instead
 * (find_whole_tokens). Three ways in. bpe_encoder_encode takes pre-tokens (the plain, regex
 * path) and keeps a per-call cache from word bytes to where its ids were first written, so a
 * repeated word costs one hash lookup and a copy. bpe_encoder_encode_units takes the units of
 * a text (units.h) and encodes each distinct unit once. bpe_encoder_encode_gpt2 splits a short
 * text itself and encodes each pre-token where it occurs. All scratch state belongs to the
 * call (the units' tables may take their large blocks from the caller's slot cache, lent to
 * one call at a time): the encoder is never written after construction, which keeps
 * concurrent calls safe.
 */
#include <stdlib.h>
#include <string.h>

#include "bit_filter.h"
#include "bpe.h"
#include "find.h"
#include "grow.h"
#include "rank_table.h"
#include "units.h"
#include "word_table.h"

#define SHORT_WORD 128          /* up to this many bytes: array + rescan */
#define CACHE_MAX_SLOTS (1 << 17)
#define NO_RANK INT32_MAX

struct bpe_encoder {
    int32_t byte_ids[256];
    rank_table ranks; /* (left, right) -> rank */
    int32_t *merged; /* merged[rank]: the id the pair becomes */
    /* byte_pair_rank[x << 8 | y]: the rank of the ids of bytes x and y. A word starts as
     * bytes, so a third of all rank lookups are these: a 256 KB table beats the hash map. */
    int32_t *byte_pair_rank;
    /* Byte strings that encode to a single token, with that token as their count: see
     * find_whole_tokens. */
    word_table whole;
    bit_filter whole_hashes; /* the word hash of every key in whole */
};

static inline int32_t rank_of(const bpe_encoder *e, int32_t a, int32_t b) {
    if (a < 0 || b < 0) return NO_RANK; /* a byte without a token merges with nothing */
    int32_t r = rank_table_get(&e->ranks, a, b);
    return r < 0 ? NO_RANK : r;
}

static int64_t encode_short(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *out);
static int find_whole_tokens(bpe_encoder *e, const int32_t *left, const int32_t *right,
                             int64_t n_merges, int64_t n_ids);
static int filter_whole_tokens(bpe_encoder *e);

int bpe_encoder_new(const int32_t *byte_ids, const int32_t *left, const int32_t *right,
                    const int32_t *merged, int64_t n_merges, int64_t n_ids, bpe_encoder **out) {
    if (!out || !byte_ids || n_merges < 0 || n_ids < 0 || n_merges >= INT32_MAX) return BPE_EINVAL;
    if (n_merges > 0 && (!left || !right || !merged)) return BPE_EINVAL;
    *out = NULL;
    for (int b = 0; b < 256; b++)
        if (byte_ids[b] < -1 || byte_ids[b] >= n_ids) return BPE_EINVAL;
    for (int64_t r = 0; r < n_merges; r++)
        if (left[r] < 0 || left[r] >= n_ids || right[r] < 0 || right[r] >= n_ids ||
            merged[r] < 0 || merged[r] >= n_ids)
            return BPE_EINVAL;

    bpe_encoder *e = calloc(1, sizeof *e);
    if (!e) return BPE_ENOMEM;
    memcpy(e->byte_ids, byte_ids, sizeof e->byte_ids);
    e->merged = malloc((size_t)n_merges * sizeof *e->merged + 1);
    e->byte_pair_rank = malloc(256 * 256 * sizeof *e->byte_pair_rank);
    int rc = e->merged && e->byte_pair_rank ? rank_table_init(&e->ranks, left, right, n_merges)
                                            : BPE_ENOMEM;
    if (rc == BPE_OK && n_merges > 0)
        memcpy(e->merged, merged, (size_t)n_merges * sizeof *e->merged);
    for (int x = 0; rc == BPE_OK && x < 256; x++)
        for (int y = 0; y < 256; y++)
            e->byte_pair_rank[x << 8 | y] = rank_of(e, e->byte_ids[x], e->byte_ids[y]);
    if (rc == BPE_OK) rc = find_whole_tokens(e, left, right, n_merges, n_ids);
    if (rc == BPE_OK) rc = filter_whole_tokens(e);
    if (rc != BPE_OK) {
        bpe_encoder_free(e);
        return rc;
    }
    *out = e;
    return BPE_OK;
}

void bpe_encoder_free(bpe_encoder *e) {
    if (!e) return;
    rank_table_free(&e->ranks);
    free(e->merged);
    free(e->byte_pair_rank);
    word_table_free(&e->whole);
    bit_filter_free(&e->whole_hashes);
    free(e);
}

/* Most words of real text are a token of the vocabulary (of realmix's pre-tokens of two bytes
 * or more, 97%, with a 50 000-token vocabulary trained on it), and their merges are most of
 * what a short text costs. But a token's bytes need not encode to that token: with merges
 * (b c), (a b), (ab c), "abc" is a token and encodes to [a, bc]. So the encoder encodes the
 * bytes of every token once, here, and keeps those that come out as a single token: for them
 * a lookup gives exactly what the merges would. Tokens are spelled from the merges (a byte's
 * token is that byte, a merge's is its pair's spellings joined); spellings over SHORT_WORD
 * bytes are left out, and so is any token spelled by a merge that names a token not yet
 * spelled, which only unusual vocabularies have. The spellings are indexed by id, so ids
 * scattered far beyond the number of tokens (legal, if odd) leave the table empty instead. */
#define WHOLE_MAX_IDS(n_merges) (8 * ((n_merges) + 256) + 65536)

static int find_whole_tokens(bpe_encoder *e, const int32_t *left, const int32_t *right,
                             int64_t n_merges, int64_t n_ids) {
    if (n_ids > WHOLE_MAX_IDS(n_merges)) return word_table_init(&e->whole, 0);
    int64_t *at = malloc((size_t)n_ids * sizeof *at + 1); /* spelling of id: arena + at[id] */
    int32_t *len = malloc((size_t)n_ids * sizeof *len + 1); /* its length; -1: none */
    int rc = at && len ? word_table_init(&e->whole, n_merges) : BPE_ENOMEM;
    uint8_t *arena = NULL;
    int64_t size = 0;
    /* Two passes over the merges: the spellings' lengths, then their bytes. */
    for (int pass = 0; rc == BPE_OK && pass < 2; pass++) {
        for (int64_t i = 0; i < n_ids; i++) len[i] = -1;
        int64_t used = 0;
        for (int b = 0; b < 256; b++) {
            int32_t id = e->byte_ids[b];
            if (id < 0 || len[id] >= 0) continue;
            if (arena) arena[used] = (uint8_t)b;
            at[id] = used++;
            len[id] = 1;
        }
        for (int64_t r = 0; r < n_merges; r++) {
            int32_t t = e->merged[r], a = left[r], b = right[r];
            if (len[t] >= 0 || len[a] < 0 || len[b] < 0 || len[a] + len[b] > SHORT_WORD)
                continue;
            if (arena) {
                memcpy(arena + used, arena + at[a], (size_t)len[a]);
                memcpy(arena + used + len[a], arena + at[b], (size_t)len[b]);
            }
            at[t] = used;
            len[t] = len[a] + len[b];
            used += len[t];
        }
        size = used;
        if (pass == 0 && !(arena = malloc((size_t)size + 1))) rc = BPE_ENOMEM;
    }
    int32_t ids[SHORT_WORD];
    word_batch batch = {.n = 0};
    for (int64_t t = 0; rc == BPE_OK && t < n_ids; t++) {
        if (len[t] < 2) continue;
        const uint8_t *w = arena + at[t];
        if (encode_short(e, w, len[t], ids) != 1) continue;
        word_key k = word_key_of(w, len[t], size - at[t]);
        int64_t known;
        if (word_table_find(&e->whole, &k, &known)) continue; /* two ids, the same bytes */
        rc = word_batch_push(&e->whole, &batch, k, ids[0], NULL);
        if (rc == BPE_OK) rc = word_batch_flush(&e->whole, &batch); /* so find sees it */
    }
    free(at), free(len), free(arena);
    return rc;
}

/* The filter in front of e->whole (see whole_may_hold): the hash of each of its words. */
static int filter_whole_tokens(bpe_encoder *e) {
    int rc = bit_filter_init(&e->whole_hashes, e->whole.n);
    for (int64_t s = 0; rc == BPE_OK && s < e->whole.n; s++)
        bit_filter_add(&e->whole_hashes, e->whole.hash[s]);
    return rc;
}

/* Most words of a short text are whole tokens (common words); most distinct words of a long
 * text are not (realmix: 84% of its first 1 000 distinct pre-tokens are tokens, 12% of all
 * 261 k). A lookup in e->whole misses the cache (~4 MB for 50 000 tokens), so the filter of
 * its hashes comes first: a word that is no token is turned away ~95% of the time by one read
 * of a table that stays in L2 (128 KB), and every whole token is found, however rare. */
static inline int whole_may_hold(const bpe_encoder *e, const word_key *k) {
    return k->len >= 2 && k->len <= SHORT_WORD && bit_filter_may_hold(&e->whole_hashes, k->hash);
}

/* Looks the word k (from word_key_of), which whole_may_hold let through, up in e->whole: 1,
 * with its token in ids[0], if its encoding is that one token. */
static int find_whole(const bpe_encoder *e, const word_key *k, int32_t *ids) {
    int64_t id;
    if (!word_table_find(&e->whole, k, &id)) return 0;
    ids[0] = (int32_t)id; /* a token id */
    return 1;
}

/* ---- short words: array, rescan for the lowest rank ---- */

/* Moves a[from + 1 .. n) down one place, four at a time through a 16-byte temporary: the
 * loads of each step read past what the step before it wrote. The arrays have room for
 * SHORT_WORD + 3 items, so a last step that reads past n stays inside them. Not memmove:
 * these moves are a few items long and a library call costs more than the move. */
static inline void shift_down(int32_t *a, int64_t from, int64_t n) {
    for (int64_t j = from; j < n - 1; j += 4) {
        int32_t tmp[4];
        memcpy(tmp, a + j + 1, sizeof tmp);
        memcpy(a + j, tmp, sizeof tmp);
    }
}

static int64_t encode_short(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *out) {
    int32_t ids[SHORT_WORD + 3];
    int32_t rank[SHORT_WORD + 3]; /* rank[i]: rank of (ids[i], ids[i+1]) */
    for (int64_t i = 0; i < n; i++) ids[i] = e->byte_ids[w[i]];
    for (int64_t i = 0; i + 1 < n; i++) rank[i] = e->byte_pair_rank[w[i] << 8 | w[i + 1]];
    while (n > 1) {
        int64_t best = 0;
        int32_t low = rank[0];
        for (int64_t i = 1; i + 1 < n; i++) {
            int32_t r = rank[i];
            best = r < low ? i : best; /* strict: leftmost among equals */
            low = r < low ? r : low;
        }
        if (low == NO_RANK) break;
        ids[best] = e->merged[low];
        shift_down(ids, best + 1, n);
        shift_down(rank, best + 1, n - 1);
        n--;
        if (best > 0) rank[best - 1] = rank_of(e, ids[best - 1], ids[best]);
        if (best + 1 < n) rank[best] = rank_of(e, ids[best], ids[best + 1]);
    }
    memcpy(out, ids, (size_t)n * sizeof *ids);
    return n;
}

/* ---- long words: linked list + heap of (rank, position) ---- */

typedef struct {
    int32_t rank;
    int64_t pos;
} heap_item;

static int item_before(heap_item x, heap_item y) {
    return x.rank < y.rank || (x.rank == y.rank && x.pos < y.pos);
}

static void heap_push(heap_item *h, int64_t *n, heap_item it) {
    int64_t i = (*n)++;
    while (i > 0 && item_before(it, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = it;
}

static heap_item heap_pop(heap_item *h, int64_t *n) {
    heap_item top = h[0], last = h[--(*n)];
    int64_t i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && item_before(h[c + 1], h[c])) c++;
        if (!item_before(h[c], last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

static int encode_long(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                       int64_t *n_ids) {
    int32_t *tok = malloc((size_t)n * sizeof *tok);
    int64_t *nxt = malloc((size_t)n * sizeof *nxt), *prv = malloc((size_t)n * sizeof *prv);
    /* Each merge pushes at most two pairs: n initial + 2n more bounds the heap. */
    heap_item *heap = malloc((size_t)(3 * n) * sizeof *heap);
    if (!tok || !nxt || !prv || !heap) {
        free(tok), free(nxt), free(prv), free(heap);
        return BPE_ENOMEM;
    }
    int64_t hn = 0;
    for (int64_t i = 0; i < n; i++) {
        tok[i] = e->byte_ids[w[i]];
        prv[i] = i - 1;
        nxt[i] = i + 1 < n ? i + 1 : -1;
    }
    for (int64_t i = 0; i + 1 < n; i++) {
        int32_t r = e->byte_pair_rank[w[i] << 8 | w[i + 1]];
        if (r != NO_RANK) heap_push(heap, &hn, (heap_item){r, i});
    }
    while (hn > 0) {
        heap_item it = heap_pop(heap, &hn);
        int64_t p = it.pos, q = nxt[p];
        /* Stale if p was merged away (tok -1), has no right neighbour, or its pair changed:
         * ranks are unique per pair, so an equal rank means the same pair. */
        if (tok[p] < 0 || q < 0 || rank_of(e, tok[p], tok[q]) != it.rank) continue;
        tok[p] = e->merged[it.rank];
        tok[q] = -1;
        nxt[p] = nxt[q];
        if (nxt[p] >= 0) prv[nxt[p]] = p;
        if (prv[p] >= 0) {
            int32_t r = rank_of(e, tok[prv[p]], tok[p]);
            if (r != NO_RANK) heap_push(heap, &hn, (heap_item){r, prv[p]});
        }
        if (nxt[p] >= 0) {
            int32_t r = rank_of(e, tok[p], tok[nxt[p]]);
            if (r != NO_RANK) heap_push(heap, &hn, (heap_item){r, p});
        }
    }
    int64_t k = 0;
    for (int64_t i = 0; i >= 0 && i < n; i = nxt[i]) ids[k++] = tok[i];
    *n_ids = k;
    free(tok), free(nxt), free(prv), free(heap);
    return BPE_OK;
}

/* Encodes one word into ids (room for n), setting *k to the number of ids. */
static int encode_word(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                       int64_t *k) {
    if (n <= SHORT_WORD) {
        *k = encode_short(e, w, n, ids);
        return BPE_OK;
    }
    return encode_long(e, w, n, ids, k);
}

/* Encodes the word k (from word_key_of): one lookup if it is a whole token, else merge by
 * merge. */
static int encode_key(const bpe_encoder *e, const word_key *k, int32_t *ids, int64_t *n_ids) {
    if (whole_may_hold(e, k) && find_whole(e, k, ids)) {
        *n_ids = 1;
        return BPE_OK;
    }
    return encode_word(e, k->ptr, k->len, ids, n_ids);
}

/* ---- the per-call cache ---- */

typedef struct {
    uint64_t hash;
    int64_t word;  /* offset of the word's bytes in the input; -1 marks a free slot */
    int64_t len;
    int64_t out;   /* where its ids were first written */
    int64_t n_ids;
} cache_slot;

int bpe_encoder_encode(const bpe_encoder *e, const uint8_t *bytes, int64_t n_bytes,
                       const int64_t *offsets, int64_t n_words, int32_t *ids, int64_t out_cap,
                       int64_t *n_out) {
    if (!e || !offsets || !n_out || n_words < 0) return BPE_EINVAL;
    *n_out = 0;
    if (offsets[0] != 0 || offsets[n_words] != n_bytes || (n_bytes > 0 && !bytes))
        return BPE_EINVAL;
    for (int64_t i = 0; i < n_words; i++)
        if (offsets[i + 1] < offsets[i]) return BPE_EINVAL;
    if (out_cap < offsets[n_words] || (out_cap > 0 && !ids)) return BPE_EINVAL;

    int64_t cap = 64;
    while (cap < 2 * n_words && cap < CACHE_MAX_SLOTS) cap *= 2;
    cache_slot *cache = malloc((size_t)cap * sizeof *cache);
    if (!cache) return BPE_ENOMEM;
    for (int64_t i = 0; i < cap; i++) cache[i].word = -1;
    int64_t cached = 0, out = 0;
    int rc = BPE_OK;

    for (int64_t wi = 0; wi < n_words && rc == BPE_OK; wi++) {
        const uint8_t *w = bytes + offsets[wi];
        int64_t n = offsets[wi + 1] - offsets[wi];
        if (n == 0) continue;
        if (n == 1) { /* a single byte is its own token: nothing to cache */
            ids[out++] = e->byte_ids[w[0]];
            continue;
        }
        word_key key = word_key_of(w, n, n_bytes - offsets[wi]);
        uint64_t h = key.hash;
        int64_t slot = (int64_t)(h & (uint64_t)(cap - 1));
        for (; cache[slot].word >= 0; slot = (slot + 1) & (cap - 1)) {
            const cache_slot *c = &cache[slot];
            if (c->hash == h && c->len == n && memcmp(bytes + c->word, w, (size_t)n) == 0) break;
        }
        if (cache[slot].word >= 0) { /* hit: copy the ids written the first time */
            memcpy(&ids[out], &ids[cache[slot].out], (size_t)cache[slot].n_ids * sizeof *ids);
            out += cache[slot].n_ids;
            continue;
        }
        int64_t k;
        if ((rc = encode_key(e, &key, &ids[out], &k)) != BPE_OK) break;
        if (2 * (cached + 1) <= cap) { /* a full cache just stops learning */
            cache[slot] = (cache_slot){h, offsets[wi], n, out, k};
            cached++;
        }
        out += k;
    }
    free(cache);
    *n_out = out;
    return rc;
}

/* ---- units: each distinct unit of a text encoded once ---- */

struct bpe_units {
    word_table distinct; /* the text's distinct units, in order of first occurrence; its
                          * slot cache (the caller's, or NULL) serves the encode's too */
    int32_t *seq;        /* seq[i]: the distinct unit at occurrence i; -1 - id: special id */
    int64_t n_seq;
    int64_t *piece_end;  /* piece_end[p]: n_seq once piece p and its special were scanned */
    int64_t n_pieces;
};

void bpe_units_free(bpe_units *u) {
    if (!u) return;
    word_table_free(&u->distinct);
    free(u->seq);
    free(u->piece_end);
    free(u);
}

int bpe_units_scan(const uint8_t *text, int64_t n, const int64_t *starts, const int64_t *ends,
                   const int32_t *then_id, int64_t n_pieces, bpe_slot_cache *cache,
                   bpe_units **out) {
    if (!out || n < 0 || n_pieces < 0 ||
        (n_pieces > 0 && (!text || !starts || !ends || !then_id)))
        return BPE_EINVAL;
    if (!pieces_in_bounds(n, starts, ends, n_pieces)) return BPE_EINVAL;
    for (int64_t p = 0; p < n_pieces; p++)
        if (then_id[p] < -1) return BPE_EINVAL;
    *out = NULL;
    bpe_units *u = calloc(1, sizeof *u);
    if (!u) return BPE_ENOMEM;
    /* Room for the most units the pieces can hold (one per byte) and their specials, taken
     * at once: the batch holds pointers into seq until it is flushed. */
    int rc = BPE_OK;
    int64_t room = n_pieces;
    for (int64_t p = 0; p < n_pieces && rc == BPE_OK; p++)
        if ((room += ends[p] - starts[p]) > INT64_MAX / 8) rc = BPE_EOVERFLOW;
    if (rc == BPE_OK) rc = word_table_init_cached(&u->distinct, room, cache);
    if (rc == BPE_OK) u->seq = resize_array(NULL, room, sizeof *u->seq, &rc);
    if (rc == BPE_OK) u->piece_end = resize_array(NULL, n_pieces, sizeof *u->piece_end, &rc);
    u->n_pieces = n_pieces;
    word_batch batch = {.n = 0};
    for (int64_t p = 0; rc == BPE_OK && p < n_pieces; p++) {
        int64_t added = 0;
        rc = units_add(&u->distinct, &batch, text + starts[p], ends[p] - starts[p],
                       u->seq + u->n_seq, &added);
        u->n_seq += added;
        if (rc == BPE_OK && then_id[p] >= 0) u->seq[u->n_seq++] = -1 - then_id[p];
        u->piece_end[p] = u->n_seq;
    }
    if (rc == BPE_OK) rc = word_batch_flush(&u->distinct, &batch);
    if (rc != BPE_OK) {
        bpe_units_free(u);
        return rc;
    }
    *out = u;
    return BPE_OK;
}

/* The ids of one distinct unit, as the output loop reads them: most units are one or two
 * tokens, kept inline so that loop reads one 8-byte entry per occurrence; longer ones point
 * into an arena. */
typedef struct {
    int32_t a, b; /* b >= 0: ids (a, b); b == -1: the id a; b == -2: see arena and start */
} unit_ids;

/* Writes at ids + *out the ids of one occurrence in a unit sequence: d is a distinct unit, or
 * -1 - id for a special token. */
static inline int write_occurrence(int32_t d, const unit_ids *entry, const int64_t *start,
                                   const int32_t *arena, int32_t *ids, int64_t out_cap,
                                   int64_t *out) {
    int64_t o = *out;
    if (o + 2 > out_cap) { /* rare: within two ids of the end, check exactly */
        int64_t m = d < 0 ? 1 : start[d + 1] - start[d];
        if (o + m > out_cap) return BPE_EINVAL;
    }
    if (d < 0) {
        ids[o] = -1 - d;
        *out = o + 1;
        return BPE_OK;
    }
    unit_ids x = entry[d];
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
    int64_t m = start[d + 1] - start[d];
    if (o + m > out_cap) return BPE_EINVAL;
    memcpy(&ids[o], &arena[start[d]], (size_t)m * sizeof *ids);
    *out = o + m;
    return BPE_OK;
}

int bpe_encoder_encode_units(const bpe_encoder *e, const bpe_units *u, const uint8_t *classes,
                             int64_t n_classes, int32_t *ids, int64_t out_cap, int64_t *n_out,
                             int64_t *piece_ids_end) {
    if (!e || !u || !classes || !n_out || (u->n_seq > 0 && !ids) || n_classes != N_CODE_POINTS)
        return BPE_EINVAL;
    *n_out = 0;
    const word_table *t = &u->distinct;
    /* Most pre-tokens recur across distinct units (realmix: 456 k units hold 1.37 M
     * pre-tokens, 261 k distinct), so each distinct pre-token is encoded once too: first all
     * units are split and their pieces numbered in a table, then each piece is encoded, then
     * each unit's ids are its pieces' ids. */
    word_table pieces;
    /* a pre-token is at least a byte */
    int rc = word_table_init_cached(&pieces, t->n_bytes, t->cache);
    if (rc != BPE_OK) return rc;
    rc = word_table_reserve(&pieces, t->n / 2); /* grown once at most, as a rule */
    int64_t *first_piece = malloc((size_t)(t->n + 1) * sizeof *first_piece);
    int32_t *piece_at = malloc((size_t)t->n_bytes * sizeof *piece_at + 1); /* <= one per byte */
    if (!first_piece || !piece_at) rc = BPE_ENOMEM;
    if (rc == BPE_OK) rc = units_split(t, classes, &pieces, piece_at, first_piece);

    /* Each distinct piece's ids, back to back: at most one id per byte. */
    int64_t *piece_start = malloc((size_t)(pieces.n + 1) * sizeof *piece_start);
    int32_t *piece_ids = malloc((size_t)pieces.n_bytes * sizeof *piece_ids + 1);
    if (rc == BPE_OK && (!piece_start || !piece_ids)) rc = BPE_ENOMEM;
    int64_t n_piece_ids = 0;
    for (int64_t s = 0; rc == BPE_OK && s < pieces.n; s++) {
        int64_t len, m;
        const uint8_t *p = word_table_key(&pieces, s, &len);
        piece_start[s] = n_piece_ids;
        /* The key from the table: its hash for the filter, its slot (read only if the filter
         * lets the word through) for the lookup. */
        word_key key = {p, len, 0, 0, pieces.hash[s]};
        if (whole_may_hold(e, &key)) {
            const word_slot *slot = &pieces.slots[pieces.slot_of[s]];
            key.head = slot->head, key.tail = slot->tail;
            if (find_whole(e, &key, piece_ids + n_piece_ids)) {
                n_piece_ids++;
                continue;
            }
        }
        rc = encode_word(e, p, len, piece_ids + n_piece_ids, &m);
        n_piece_ids += m;
    }
    if (rc == BPE_OK) piece_start[pieces.n] = n_piece_ids;
    word_table_free(&pieces);

    /* Each distinct unit's ids: its pieces' ids, back to back. */
    int64_t *start = malloc((size_t)(t->n + 1) * sizeof *start);
    unit_ids *entry = malloc((size_t)t->n * sizeof *entry + 1);
    int32_t *arena = malloc((size_t)t->n_bytes * sizeof *arena + 1);
    if (rc == BPE_OK && (!start || !entry || !arena)) rc = BPE_ENOMEM;
    int64_t used = 0;
    for (int64_t d = 0; rc == BPE_OK && d < t->n; d++) {
        start[d] = used;
        for (int64_t j = first_piece[d]; j < first_piece[d + 1]; j++) {
            int32_t s = piece_at[j];
            int64_t m = piece_start[s + 1] - piece_start[s];
            memcpy(arena + used, piece_ids + piece_start[s], (size_t)m * sizeof *arena);
            used += m;
        }
        const int32_t *unit = arena + start[d];
        int64_t m = used - start[d];
        entry[d] = m == 1 ? (unit_ids){unit[0], -1}
                   : m == 2 && unit[1] >= 0 /* -1: a byte without a token */
                       ? (unit_ids){unit[0], unit[1]}
                       : (unit_ids){0, -2};
    }
    if (rc == BPE_OK) start[t->n] = used;
    free(first_piece), free(piece_at), free(piece_start), free(piece_ids);
    int64_t out = 0, i = 0;
    for (int64_t p = 0; rc == BPE_OK && p < u->n_pieces; p++) {
        for (; rc == BPE_OK && i < u->piece_end[p]; i++)
            rc = write_occurrence(u->seq[i], entry, start, arena, ids, out_cap, &out);
        if (piece_ids_end && rc == BPE_OK) piece_ids_end[p] = out;
    }
    free(start), free(entry), free(arena);
    *n_out = out;
    return rc;
}

/* ---- short texts: pre-tokens encoded where they occur ---- */

/* Encodes UTF-8 text[0 .. n) (already validated) at ids + *out: GPT-2's pre-tokens, each
 * where it occurs; ends is scratch with room for n. */
static int encode_piece_gpt2(const bpe_encoder *e, const uint8_t *text, int64_t n,
                             const uint8_t *classes, int64_t *ends, int32_t *ids,
                             int64_t *out) {
    int64_t n_words = n > 0 ? gpt2_split(text, n, classes, ends) : 0, from = 0;
    for (int64_t j = 0; j < n_words; from = ends[j++]) {
        const uint8_t *w = text + from;
        int64_t len = ends[j] - from, m;
        if (len == 1) {
            ids[(*out)++] = e->byte_ids[w[0]];
            continue;
        }
        word_key key = word_key_of(w, len, n - from);
        int rc = encode_key(e, &key, ids + *out, &m);
        if (rc != BPE_OK) return rc;
        *out += m;
    }
    return BPE_OK;
}

int bpe_encoder_encode_gpt2(const bpe_encoder *e, const uint8_t *text, int64_t n,
                            const int64_t *starts, const int64_t *ends, const int32_t *then_id,
                            int64_t n_pieces, const uint8_t *classes, int64_t n_classes,
                            int32_t *ids, int64_t out_cap, int64_t *n_out) {
    if (!e || !classes || !n_out || n < 0 || n_pieces < 0 || n_classes != N_CODE_POINTS ||
        (n > 0 && !text) || (n_pieces > 0 && (!starts || !ends || !then_id || !ids)))
        return BPE_EINVAL;
    *n_out = 0;
    if (!pieces_in_bounds(n, starts, ends, n_pieces)) return BPE_EINVAL;
    int64_t longest = 0, need = 0; /* at most one id per byte, and one per special */
    for (int64_t p = 0; p < n_pieces; p++) {
        if (then_id[p] < -1) return BPE_EINVAL;
        int64_t len = ends[p] - starts[p];
        if (len > INT64_MAX / 2 - need) return BPE_EOVERFLOW;
        need += len + (then_id[p] >= 0);
        if (len > longest) longest = len;
    }
    if (out_cap < need) return BPE_EINVAL;
    for (int64_t p = 0; p < n_pieces; p++)
        if (!utf8_valid(text + starts[p], ends[p] - starts[p])) return BPE_EUTF8;
    int64_t *word_ends = malloc((size_t)longest * sizeof *word_ends + 1);
    if (!word_ends) return BPE_ENOMEM;
    int64_t out = 0;
    int rc = BPE_OK;
    for (int64_t p = 0; p < n_pieces && rc == BPE_OK; p++) {
        rc = encode_piece_gpt2(e, text + starts[p], ends[p] - starts[p], classes, word_ends, ids,
                               &out);
        if (rc == BPE_OK && then_id[p] >= 0) ids[out++] = then_id[p];
    }
    free(word_ends);
    *n_out = out;
    return rc;
}

int bpe_encoder_encode_gpt2_text(const bpe_encoder *e, const uint8_t *text, int64_t n,
                                 const uint8_t *special, int64_t special_len, int32_t special_id,
                                 const uint8_t *classes, int64_t n_classes, int32_t *ids,
                                 int64_t out_cap, int64_t *n_out) {
    if (!e || !classes || !n_out || n < 0 || n_classes != N_CODE_POINTS ||
        (n > 0 && (!text || !ids)) || special_len < 0 ||
        (special_len > 0 && (!special || special_id < 0)))
        return BPE_EINVAL;
    *n_out = 0;
    /* A special's id stands for its bytes (at least one): one id per byte at most. */
    if (out_cap < n) return BPE_EINVAL;
    /* Cut at a special that is valid UTF-8, a valid text gives valid pieces: no match can
     * start inside a character, whose continuation bytes no UTF-8 string starts with. */
    if (!utf8_valid(special, special_len)) return BPE_EINVAL;
    if (!utf8_valid(text, n)) return BPE_EUTF8;
    int64_t *word_ends = malloc((size_t)n * sizeof *word_ends + 1);
    if (!word_ends) return BPE_ENOMEM;
    int64_t out = 0, from = 0;
    int rc = BPE_OK;
    for (;;) {
        int64_t at = special_len > 0 ? find_next(text, n, from, special, special_len) : -1;
        rc = encode_piece_gpt2(e, text + from, (at < 0 ? n : at) - from, classes, word_ends, ids,
                               &out);
        if (rc != BPE_OK || at < 0) break;
        ids[out++] = special_id;
        from = at + special_len;
    }
    free(word_ends);
    *n_out = out;
    return rc;
}
