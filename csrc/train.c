/* train.c - the BPE merge loop (SPEC 1.4-1.7).
 *
 * Every distinct pre-token ("word") is laid out once in one flat array of symbols, one per
 * byte. A symbol holds its token, its word's number (counts are per word, in weight[]) and
 * the distances to the previous and next live symbols of its word, so the live symbols of a
 * word form a doubly linked list. Merging the pair at p rewrites p's token and unlinks its
 * right neighbour, which becomes dead (tok = -1). The links are relative and the fields sit
 * together because a merge reads a symbol and its neighbours: they share a cache line far
 * more often than not.
 *
 * Each pair keeps the positions where it was seen (its "sites"). A merge walks only the sites
 * of the pair it merges, so it touches only the words that contain it. Sites are never removed
 * when a pair disappears from a spot; they are checked when walked and skipped if stale. That
 * check is exact because the bytes of the token at a position, and of its right neighbour, only
 * ever grow: a stale site can never become valid again.
 */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE (big_alloc.h) */
#include <stdlib.h>
#include <string.h>

#include "big_alloc.h"
#include "bpe.h"
#include "grow.h"
#include "pair_map.h"
#include "pair_queue.h"
#include "site_pool.h"
#include "token_table.h"

#define DEFAULT_BUCKET_LIMIT 65536

/* Sites are sparse, so walking them misses the cache once per site; asking for memory a few
 * sites ahead overlaps those misses: two steps, first the symbol's neighbourhood (its left
 * neighbour may sit in the cache line before it), then, once that has arrived, the count of
 * its word. A hint only: compilers without it lose nothing. */
#define PREFETCH_AHEAD 8
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(addr) __builtin_prefetch(addr)
#else
#define PREFETCH(addr) ((void)(addr))
#endif

typedef struct {
    int32_t tok;    /* token id; -1 once merged into its left neighbour */
    int32_t back;   /* distance to the previous live symbol of the word; 0 at its start */
    int32_t fwd;    /* distance to the next live symbol of the word; 0 at its end */
    int32_t word;   /* the word it belongs to, whose count is weight[word] (16 bytes, not the
                     * 24 a 64-bit count here would take: a third less memory to stream) */
} symbol;

typedef struct {
    int64_t *pos;  /* positions of the left token, possibly stale */
    int64_t len, cap;
    int8_t sorted; /* pos is ascending (merges must walk a word left to right) */
    int8_t dirty;  /* count changed during the current merge */
    int8_t owned;  /* pos is from the trainer's site_pool, not a piece of its site_arena */
} pair_sites;

/* The two pairs a neighbour token x takes part in during the merge of (a, b) into n: on the
 * left, (x, a) loses and (x, n) gains; on the right, (b, x) loses and (n, x) gains. */
typedef struct {
    int32_t lost, gained; /* pair indices, -1 until x is first met in this merge */
} neighbour_pairs;

struct bpe_trainer {
    symbol *sym;
    int64_t n_pos;
    int64_t *weight;   /* weight[w]: the count of word w */

    token_table tokens;
    pair_map map;      /* (left, right) -> index into pairs/sites */
    pair_rec *pairs;
    pair_sites *sites;
    int64_t *site_arena; /* the first site lists, all in one block: one malloc, one free */
    site_pool pool;      /* the lists that outgrow their piece, and new pairs' lists */
    int32_t n_pairs, cap_pairs;
    pair_queue queue;

    int32_t *dirty;    /* pairs whose count changed in the current merge */
    int64_t n_dirty, cap_dirty;

    /* Per-merge memo, indexed by neighbour token id: a merge meets few distinct neighbours at
     * many sites, so this replaces four hash probes per site by two array reads. Sized by the
     * vocabulary, not the corpus; only the entries a merge touched are reset after it. */
    neighbour_pairs *memo[2]; /* [0]: left neighbours, [1]: right neighbours */
    int32_t *touched[2];      /* neighbour ids set in memo[side] during this merge */
    int64_t n_touched[2];
    int32_t cap_memo;
    int broken;        /* a failed merge left the state inconsistent: refuse further steps */
};

static inline int64_t prev_of(const symbol *sym, int64_t p) {
    return sym[p].back ? p - sym[p].back : -1;
}

static inline int64_t next_of(const symbol *sym, int64_t p) {
    return sym[p].fwd ? p + sym[p].fwd : -1;
}

/* ---- growable arrays ---- */

static int grow_pairs(bpe_trainer *t) {
    int64_t cap = grow_capacity(t->cap_pairs, (int64_t)t->cap_pairs + 1, 1024);
    if (cap < 0 || cap > INT32_MAX) return BPE_EOVERFLOW; /* pair indices are int32 */
    int rc;
    pair_rec *pairs = resize_array(t->pairs, cap, sizeof *pairs, &rc);
    if (!pairs) return rc;
    t->pairs = pairs;
    pair_sites *sites = resize_array(t->sites, cap, sizeof *sites, &rc);
    if (!sites) return rc;
    t->sites = sites;
    t->cap_pairs = (int32_t)cap;
    return BPE_OK;
}

static int sites_push(site_pool *pool, pair_sites *s, int64_t pos) {
    if (s->len == s->cap) { /* grow; a list still in the arena moves to the pool */
        int64_t cap = site_pool_capacity(s->len + 1);
        if (cap < 0) return BPE_EOVERFLOW;
        int64_t *p = site_pool_alloc(pool, cap);
        if (!p) return BPE_ENOMEM;
        if (s->len > 0) memcpy(p, s->pos, (size_t)s->len * sizeof *p);
        if (s->owned) site_pool_release(pool, s->pos, s->cap);
        s->pos = p;
        s->cap = cap;
        s->owned = 1;
    }
    if (s->len > 0 && s->pos[s->len - 1] > pos) s->sorted = 0;
    s->pos[s->len++] = pos;
    return BPE_OK;
}

static void sites_release(site_pool *pool, pair_sites *s) {
    if (s->owned) site_pool_release(pool, s->pos, s->cap);
    s->pos = NULL;
    s->len = s->cap = 0;
    s->sorted = 1;
    s->owned = 0;
}

static int mark_dirty(bpe_trainer *t, int32_t idx) {
    if (t->sites[idx].dirty) return BPE_OK;
    int rc;
    int32_t *d = reserve_array(t->dirty, &t->cap_dirty, t->n_dirty + 1, 256, sizeof *d, &rc);
    if (!d) return rc;
    t->dirty = d;
    t->dirty[t->n_dirty++] = idx;
    t->sites[idx].dirty = 1;
    return BPE_OK;
}

/* ---- pairs ---- */

/* Index of pair (left, right), created with count 0 if new. */
static int pair_index(bpe_trainer *t, int32_t left, int32_t right, int32_t *idx) {
    if (t->n_pairs == t->cap_pairs) {
        int rc = grow_pairs(t);
        if (rc != BPE_OK) return rc;
    }
    int inserted;
    *idx = t->n_pairs;
    int rc = pair_map_get_or_put(&t->map, pair_key(left, right), idx, &inserted);
    if (rc != BPE_OK || !inserted) return rc;
    pair_rec *p = &t->pairs[t->n_pairs];
    p->left = left;
    p->right = right;
    p->count = 0;
    p->filed = 0;
    p->prev = p->next = -1;
    memset(&t->sites[t->n_pairs], 0, sizeof t->sites[0]);
    t->sites[t->n_pairs].sorted = 1;
    t->n_pairs++;
    return BPE_OK;
}

/* A merge moved one occurrence, in a word counted w times, from pair `lost` to pair `gained`
 * (whose left token now sits at pos). */
static int move_occurrence(bpe_trainer *t, int32_t lost, int32_t gained, int64_t w, int64_t pos) {
    int rc;
    t->pairs[lost].count -= w;
    if (t->pairs[lost].count < 0) return BPE_EINTERNAL;
    t->pairs[gained].count += w; /* cannot overflow: bounded by the total checked at start */
    if ((rc = sites_push(&t->pool, &t->sites[gained], pos)) != BPE_OK) return rc;
    if ((rc = mark_dirty(t, lost)) != BPE_OK) return rc;
    return mark_dirty(t, gained);
}

/* ---- per-merge neighbour memo ---- */

static int grow_memo(bpe_trainer *t, int32_t n_tokens) {
    if (n_tokens <= t->cap_memo) return BPE_OK;
    int64_t cap = grow_capacity(t->cap_memo, n_tokens, 1024);
    if (cap < 0 || cap > INT32_MAX) return BPE_EOVERFLOW;
    int rc;
    for (int side = 0; side < 2; side++) {
        neighbour_pairs *m = resize_array(t->memo[side], cap, sizeof *m, &rc);
        if (!m) return rc;
        t->memo[side] = m;
        for (int64_t i = t->cap_memo; i < cap; i++) m[i].lost = m[i].gained = -1;
        int32_t *touched = resize_array(t->touched[side], cap, sizeof *touched, &rc);
        if (!touched) return rc;
        t->touched[side] = touched;
    }
    t->cap_memo = (int32_t)cap;
    return BPE_OK;
}

/* The pairs that neighbour x on `side` (0: left, 1: right) loses and gains when (a, b)
 * becomes n. */
static int neighbour(bpe_trainer *t, int side, int32_t x, int32_t a, int32_t b, int32_t n,
                     neighbour_pairs **out) {
    neighbour_pairs *np = &t->memo[side][x];
    *out = np;
    if (np->lost >= 0) return BPE_OK;
    uint64_t lost_key = side == 0 ? pair_key(x, a) : pair_key(b, x);
    np->lost = pair_map_get(&t->map, lost_key);
    if (np->lost < 0) return BPE_EINTERNAL; /* the occurrence exists, so must its pair */
    t->touched[side][t->n_touched[side]++] = x;
    return side == 0 ? pair_index(t, x, n, &np->gained) : pair_index(t, n, x, &np->gained);
}

static void reset_memo(bpe_trainer *t) {
    for (int side = 0; side < 2; side++) {
        for (int64_t i = 0; i < t->n_touched[side]; i++) {
            neighbour_pairs *np = &t->memo[side][t->touched[side][i]];
            np->lost = np->gained = -1;
        }
        t->n_touched[side] = 0;
    }
}

/* ---- construction ---- */

static int check_input(const uint8_t *bytes, int64_t n_bytes, const int64_t *offsets,
                       const int64_t *counts, int64_t n_words) {
    if (n_bytes < 0 || n_words < 0) return BPE_EINVAL;
    if (!offsets || (n_bytes > 0 && !bytes) || (n_words > 0 && !counts)) return BPE_EINVAL;
    if (offsets[0] != 0 || offsets[n_words] != n_bytes) return BPE_EINVAL;
    if (n_words > INT32_MAX) return BPE_EOVERFLOW; /* symbol.word is an int32 */
    for (int64_t i = 0; i < n_words; i++) {
        if (offsets[i + 1] < offsets[i] || counts[i] < 0) return BPE_EINVAL;
        if (offsets[i + 1] - offsets[i] > INT32_MAX) return BPE_EOVERFLOW; /* relative links */
    }
    if ((uint64_t)n_bytes > SIZE_MAX / sizeof(symbol)) return BPE_EOVERFLOW;
    return BPE_OK;
}

static int lay_out_words(bpe_trainer *t, const uint8_t *bytes, const int64_t *offsets,
                         const int64_t *counts, int64_t n_words) {
    t->sym = big_alloc((size_t)t->n_pos * sizeof *t->sym);
    t->weight = malloc((size_t)n_words * sizeof *t->weight + 1);
    if (!t->sym || !t->weight) return BPE_ENOMEM;
    if (n_words > 0) memcpy(t->weight, counts, (size_t)n_words * sizeof *counts);
    for (int64_t w = 0; w < n_words; w++) {
        int64_t lo = offsets[w], hi = offsets[w + 1];
        int live = counts[w] > 0; /* words never seen take no part */
        for (int64_t p = lo; p < hi; p++) {
            symbol *s = &t->sym[p];
            s->word = (int32_t)w;
            s->tok = live ? bytes[p] : -1;
            s->back = live && p > lo;
            s->fwd = live && p + 1 < hi;
        }
    }
    return BPE_OK;
}

/* Counts every adjacent pair, then records its sites in lists sized exactly, cut from one
 * arena (a list that outgrows its piece moves to the pool: sites_push). Every token is still a
 * byte, so a 256 x 256 table finds a position's pair: the map is asked once per distinct pair,
 * not once per position. */
static int count_initial_pairs(bpe_trainer *t) {
    int rc;
    int64_t total = 0; /* every pair count, now and after any merge, is at most this */
    const symbol *sym = t->sym;
    int64_t n_sites = 0;
    int32_t *byte_pair = malloc(256 * 256 * sizeof *byte_pair); /* pair index, or -1 */
    if (!byte_pair) return BPE_ENOMEM;
    memset(byte_pair, 0xFF, 256 * 256 * sizeof *byte_pair);
    for (int64_t p = 0; p < t->n_pos; p++) {
        if (sym[p].tok < 0 || !sym[p].fwd) continue;
        int32_t *idx = &byte_pair[sym[p].tok << 8 | sym[p + 1].tok];
        if (*idx < 0 && (rc = pair_index(t, sym[p].tok, sym[p + 1].tok, idx)) != BPE_OK) {
            free(byte_pair);
            return rc;
        }
        int64_t w = t->weight[sym[p].word];
        if (total > INT64_MAX - w) {
            free(byte_pair);
            return BPE_EOVERFLOW;
        }
        total += w;
        t->pairs[*idx].count += w;
        t->sites[*idx].cap++;
        n_sites++;
    }
    t->site_arena = malloc((size_t)n_sites * sizeof *t->site_arena + 1);
    if (!t->site_arena) {
        free(byte_pair);
        return BPE_ENOMEM;
    }
    int64_t *from = t->site_arena;
    for (int32_t i = 0; i < t->n_pairs; from += t->sites[i++].cap) t->sites[i].pos = from;
    for (int64_t p = 0; p < t->n_pos; p++) {
        if (sym[p].tok < 0 || !sym[p].fwd) continue;
        pair_sites *s = &t->sites[byte_pair[sym[p].tok << 8 | sym[p + 1].tok]];
        s->pos[s->len++] = p; /* ascending by construction */
    }
    free(byte_pair);
    for (int32_t i = 0; i < t->n_pairs; i++)
        if ((rc = pair_queue_update(&t->queue, t->pairs, i)) != BPE_OK) return rc;
    return BPE_OK;
}

int bpe_trainer_new(const uint8_t *bytes, int64_t n_bytes, const int64_t *offsets,
                    const int64_t *counts, int64_t n_words, int64_t bucket_limit,
                    bpe_trainer **out) {
    if (!out) return BPE_EINVAL;
    *out = NULL;
    int rc = check_input(bytes, n_bytes, offsets, counts, n_words);
    if (rc != BPE_OK) return rc;
    if (bucket_limit == 0) bucket_limit = DEFAULT_BUCKET_LIMIT;
    if (bucket_limit < 2) return BPE_EINVAL;

    bpe_trainer *t = calloc(1, sizeof *t);
    if (!t) return BPE_ENOMEM;
    t->n_pos = n_bytes;
    if ((rc = token_table_init(&t->tokens)) != BPE_OK ||
        (rc = pair_map_init(&t->map, 1 << 16)) != BPE_OK ||
        (rc = pair_queue_init(&t->queue, bucket_limit, &t->tokens)) != BPE_OK ||
        (rc = lay_out_words(t, bytes, offsets, counts, n_words)) != BPE_OK ||
        (rc = count_initial_pairs(t)) != BPE_OK) {
        bpe_trainer_free(t);
        return rc;
    }
    *out = t;
    return BPE_OK;
}

void bpe_trainer_free(bpe_trainer *t) {
    if (!t) return;
    free(t->sym);
    free(t->weight);
    token_table_free(&t->tokens);
    pair_map_free(&t->map);
    if (t->sites) /* lists too large for the pool's chunks */
        for (int32_t i = 0; i < t->n_pairs; i++)
            if (t->sites[i].owned && t->sites[i].cap > SITE_POOL_MAX) free(t->sites[i].pos);
    site_pool_free(&t->pool);
    free(t->site_arena);
    free(t->sites);
    free(t->pairs);
    pair_queue_free(&t->queue);
    free(t->dirty);
    for (int side = 0; side < 2; side++) {
        free(t->memo[side]);
        free(t->touched[side]);
    }
    free(t);
}

/* ---- merging ---- */

static int cmp_pos(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Replaces (a, b) at position p (b at q, the next symbol) by token n, moving the counts of
 * the neighbouring pairs: (l, a) becomes (l, n) and (b, r) becomes (n, r). The pair (a, b)
 * itself is `best`: its count is adjusted directly. */
static int merge_at(bpe_trainer *t, int64_t p, int32_t best, int32_t a, int32_t b, int32_t n) {
    symbol *sym = t->sym;
    int64_t q = p + sym[p].fwd, l = prev_of(sym, p), r = next_of(sym, q);
    int64_t w = t->weight[sym[p].word];
    neighbour_pairs *np;
    int rc;
    t->pairs[best].count -= w;
    if (l >= 0) {
        if ((rc = neighbour(t, 0, sym[l].tok, a, b, n, &np)) != BPE_OK ||
            (rc = move_occurrence(t, np->lost, np->gained, w, l)) != BPE_OK)
            return rc;
    }
    if (r >= 0) {
        if ((rc = neighbour(t, 1, sym[r].tok, a, b, n, &np)) != BPE_OK ||
            (rc = move_occurrence(t, np->lost, np->gained, w, p)) != BPE_OK)
            return rc;
    }
    sym[p].tok = n;
    sym[p].fwd = r >= 0 ? (int32_t)(r - p) : 0;
    if (r >= 0) sym[r].back = (int32_t)(r - p);
    sym[q].tok = -1;
    sym[q].back = sym[q].fwd = 0;
    return BPE_OK;
}

/* Applies the merge of pair `best` everywhere, left to right within each word. */
static int merge_pair(bpe_trainer *t, int32_t best, int32_t n) {
    int32_t a = t->pairs[best].left, b = t->pairs[best].right;
    pair_sites taken = t->sites[best]; /* walked while new sites are pushed elsewhere */
    memset(&t->sites[best], 0, sizeof t->sites[best]);
    t->sites[best].sorted = 1;
    if (!taken.sorted) qsort(taken.pos, (size_t)taken.len, sizeof *taken.pos, cmp_pos);

    int rc = mark_dirty(t, best);
    if (rc == BPE_OK) rc = grow_memo(t, t->tokens.n);
    const symbol *sym = t->sym;
    for (int64_t i = 0; i < taken.len && rc == BPE_OK; i++) {
        int64_t p = taken.pos[i];
        if (i + 2 * PREFETCH_AHEAD < taken.len) {
            int64_t ahead = taken.pos[i + 2 * PREFETCH_AHEAD];
            PREFETCH(&sym[ahead > 0 ? ahead - 1 : 0]);
            PREFETCH(&sym[ahead + 2 < t->n_pos ? ahead + 2 : ahead]);
        }
        if (i + PREFETCH_AHEAD < taken.len)
            PREFETCH(&t->weight[sym[taken.pos[i + PREFETCH_AHEAD]].word]);
        /* Stale sites are skipped: the token moved on, or this b was already merged. */
        if (sym[p].tok != a || !sym[p].fwd || sym[p + sym[p].fwd].tok != b) continue;
        rc = merge_at(t, p, best, a, b, n);
    }
    if (taken.owned) site_pool_release(&t->pool, taken.pos, taken.cap);
    reset_memo(t);
    if (rc != BPE_OK) return rc;

    for (int64_t i = 0; i < t->n_dirty; i++) {
        int32_t idx = t->dirty[i];
        t->sites[idx].dirty = 0;
        if ((rc = pair_queue_update(&t->queue, t->pairs, idx)) != BPE_OK) return rc;
        /* At count 0 every site is stale: drop them. (The pair may gain again later, only
         * when a merge re-spells an existing token; it then starts a fresh list.) */
        if (t->pairs[idx].count == 0) sites_release(&t->pool, &t->sites[idx]);
    }
    t->n_dirty = 0;
    /* Every occurrence of (a, b) was merged or overlapped a merged one. */
    return t->pairs[best].count == 0 ? BPE_OK : BPE_EINTERNAL;
}

int bpe_trainer_step(bpe_trainer *t, int64_t max_merges, int32_t *left, int32_t *right,
                     int64_t *count, int64_t *n_done) {
    if (!t || !n_done || max_merges < 0) return BPE_EINVAL;
    *n_done = 0;
    if (t->broken) return BPE_EINVAL;
    if (max_merges > 0 && (!left || !right || !count)) return BPE_EINVAL;
    for (int64_t k = 0; k < max_merges; k++) {
        int32_t best, fresh_id, n;
        int rc = pair_queue_pop(&t->queue, t->pairs, &best);
        if (rc != BPE_OK) {
            t->broken = 1;
            return rc;
        }
        if (best < 0) break; /* no pair with a positive count is left */
        left[k] = t->pairs[best].left;
        right[k] = t->pairs[best].right;
        count[k] = t->pairs[best].count;
        /* Words hold canonical ids: n is the merge's own id unless its bytes already exist. */
        if ((rc = token_table_add(&t->tokens, left[k], right[k], &fresh_id, &n)) != BPE_OK ||
            (rc = merge_pair(t, best, n)) != BPE_OK) {
            t->broken = 1;
            return rc;
        }
        *n_done = k + 1;
    }
    return BPE_OK;
}
