/* train.c - the BPE merge loop (SPEC 1.4-1.7).
 *
 * Every distinct pre-token ("word") is laid out once in one flat array of symbols, one per
 * byte. A symbol holds its token, the word's count and the distances to the previous and next
 * live symbols of its word, so the live symbols of a word form a doubly linked list. Merging
 * the pair at p rewrites p's token and unlinks its right neighbour, which becomes dead
 * (tok = -1). The links are relative and the fields sit together because a merge reads a
 * symbol and its neighbours: they share a cache line far more often than not.
 *
 * Each pair keeps the positions where it was seen (its "sites"). A merge walks only the sites
 * of the pair it merges, so it touches only the words that contain it. Sites are never removed
 * when a pair disappears from a spot; they are checked when walked and skipped if stale. That
 * check is exact because the bytes of the token at a position, and of its right neighbour, only
 * ever grow: a stale site can never become valid again.
 */
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "pair_map.h"
#include "pair_queue.h"
#include "token_table.h"

#define DEFAULT_BUCKET_LIMIT 65536

/* Sites are sparse, so walking them misses the cache once per site; asking for the symbol a
 * few sites ahead overlaps those misses. A hint only: compilers without it lose nothing. */
#define PREFETCH_AHEAD 16
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(addr) __builtin_prefetch(addr)
#else
#define PREFETCH(addr) ((void)(addr))
#endif

typedef struct {
    int64_t weight; /* count of the word this symbol belongs to */
    int32_t tok;    /* token id; -1 once merged into its left neighbour */
    int32_t back;   /* distance to the previous live symbol of the word; 0 at its start */
    int32_t fwd;    /* distance to the next live symbol of the word; 0 at its end */
} symbol;

typedef struct {
    int64_t *pos;  /* positions of the left token, possibly stale */
    int64_t len, cap;
    int sorted;    /* pos is ascending (merges must walk a word left to right) */
    int dirty;     /* count changed during the current merge */
} pair_sites;

struct bpe_trainer {
    symbol *sym;
    int64_t n_pos;

    token_table tokens;
    pair_map map;      /* (left, right) -> index into pairs/sites */
    pair_rec *pairs;
    pair_sites *sites;
    int32_t n_pairs, cap_pairs;
    pair_queue queue;

    int32_t *dirty;    /* pairs whose count changed in the current merge */
    int64_t n_dirty, cap_dirty;
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
    if (t->cap_pairs > INT32_MAX / 2) return BPE_EOVERFLOW;
    int32_t cap = t->cap_pairs ? 2 * t->cap_pairs : 1024;
    pair_rec *pairs = realloc(t->pairs, (size_t)cap * sizeof *pairs);
    if (!pairs) return BPE_ENOMEM;
    t->pairs = pairs;
    pair_sites *sites = realloc(t->sites, (size_t)cap * sizeof *sites);
    if (!sites) return BPE_ENOMEM;
    t->sites = sites;
    t->cap_pairs = cap;
    return BPE_OK;
}

static int sites_push(pair_sites *s, int64_t pos) {
    if (s->len == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 4;
        if ((uint64_t)cap > SIZE_MAX / sizeof(int64_t)) return BPE_EOVERFLOW;
        int64_t *p = realloc(s->pos, (size_t)cap * sizeof *p);
        if (!p) return BPE_ENOMEM;
        s->pos = p;
        s->cap = cap;
    }
    if (s->len > 0 && s->pos[s->len - 1] > pos) s->sorted = 0;
    s->pos[s->len++] = pos;
    return BPE_OK;
}

static void sites_release(pair_sites *s) {
    free(s->pos);
    s->pos = NULL;
    s->len = s->cap = 0;
    s->sorted = 1;
}

static int mark_dirty(bpe_trainer *t, int32_t idx) {
    if (t->sites[idx].dirty) return BPE_OK;
    if (t->n_dirty == t->cap_dirty) {
        int64_t cap = t->cap_dirty ? 2 * t->cap_dirty : 256;
        if ((uint64_t)cap > SIZE_MAX / sizeof(int32_t)) return BPE_EOVERFLOW;
        int32_t *d = realloc(t->dirty, (size_t)cap * sizeof *d);
        if (!d) return BPE_ENOMEM;
        t->dirty = d;
        t->cap_dirty = cap;
    }
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

/* A merge created pair (left, right) at position pos of a word counted w times. */
static int pair_gained(bpe_trainer *t, int32_t left, int32_t right, int64_t w, int64_t pos) {
    int32_t idx;
    int rc = pair_index(t, left, right, &idx);
    if (rc != BPE_OK) return rc;
    t->pairs[idx].count += w; /* cannot overflow: bounded by the total checked at start */
    if ((rc = sites_push(&t->sites[idx], pos)) != BPE_OK) return rc;
    return mark_dirty(t, idx);
}

/* A merge destroyed one occurrence of pair (left, right) in a word counted w times. */
static int pair_lost(bpe_trainer *t, int32_t left, int32_t right, int64_t w) {
    int32_t idx = pair_map_get(&t->map, pair_key(left, right));
    if (idx < 0) return BPE_EINTERNAL;
    t->pairs[idx].count -= w;
    if (t->pairs[idx].count < 0) return BPE_EINTERNAL;
    return mark_dirty(t, idx);
}

/* ---- construction ---- */

static int check_input(const uint8_t *bytes, int64_t n_bytes, const int64_t *offsets,
                       const int64_t *counts, int64_t n_words) {
    if (n_bytes < 0 || n_words < 0) return BPE_EINVAL;
    if (!offsets || (n_bytes > 0 && !bytes) || (n_words > 0 && !counts)) return BPE_EINVAL;
    if (offsets[0] != 0 || offsets[n_words] != n_bytes) return BPE_EINVAL;
    for (int64_t i = 0; i < n_words; i++) {
        if (offsets[i + 1] < offsets[i] || counts[i] < 0) return BPE_EINVAL;
        if (offsets[i + 1] - offsets[i] > INT32_MAX) return BPE_EOVERFLOW; /* relative links */
    }
    if ((uint64_t)n_bytes > SIZE_MAX / sizeof(symbol)) return BPE_EOVERFLOW;
    return BPE_OK;
}

static int lay_out_words(bpe_trainer *t, const uint8_t *bytes, const int64_t *offsets,
                         const int64_t *counts, int64_t n_words) {
    t->sym = malloc((size_t)t->n_pos * sizeof *t->sym + 1);
    if (!t->sym) return BPE_ENOMEM;
    for (int64_t w = 0; w < n_words; w++) {
        int64_t lo = offsets[w], hi = offsets[w + 1];
        int live = counts[w] > 0; /* words never seen take no part */
        for (int64_t p = lo; p < hi; p++) {
            symbol *s = &t->sym[p];
            s->weight = counts[w];
            s->tok = live ? bytes[p] : -1;
            s->back = live && p > lo;
            s->fwd = live && p + 1 < hi;
        }
    }
    return BPE_OK;
}

/* Counts every adjacent pair, then records its sites in arrays sized exactly. */
static int count_initial_pairs(bpe_trainer *t) {
    int rc;
    int64_t total = 0; /* every pair count, now and after any merge, is at most this */
    const symbol *sym = t->sym;
    for (int64_t p = 0; p < t->n_pos; p++) {
        if (sym[p].tok < 0 || !sym[p].fwd) continue;
        int32_t idx;
        if ((rc = pair_index(t, sym[p].tok, sym[p + 1].tok, &idx)) != BPE_OK) return rc;
        if (total > INT64_MAX - sym[p].weight) return BPE_EOVERFLOW;
        total += sym[p].weight;
        t->pairs[idx].count += sym[p].weight;
        t->sites[idx].cap++;
    }
    for (int32_t i = 0; i < t->n_pairs; i++) {
        t->sites[i].pos = malloc((size_t)t->sites[i].cap * sizeof(int64_t));
        if (!t->sites[i].pos) return BPE_ENOMEM;
    }
    for (int64_t p = 0; p < t->n_pos; p++) {
        if (sym[p].tok < 0 || !sym[p].fwd) continue;
        pair_sites *s = &t->sites[pair_map_get(&t->map, pair_key(sym[p].tok, sym[p + 1].tok))];
        s->pos[s->len++] = p; /* ascending by construction */
    }
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
    token_table_free(&t->tokens);
    pair_map_free(&t->map);
    if (t->sites)
        for (int32_t i = 0; i < t->n_pairs; i++) free(t->sites[i].pos);
    free(t->sites);
    free(t->pairs);
    pair_queue_free(&t->queue);
    free(t->dirty);
    free(t);
}

/* ---- merging ---- */

static int cmp_pos(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Replaces (a, b) at position p (b at q, the next symbol) by token n, moving the counts of
 * the neighbouring pairs: (l, a) becomes (l, n) and (b, r) becomes (n, r). The pair (a, b)
 * itself is `best`: its count is adjusted directly, with no lookup. */
static int merge_at(bpe_trainer *t, int64_t p, int32_t best, int32_t n) {
    symbol *sym = t->sym;
    int32_t a = sym[p].tok;
    int64_t q = p + sym[p].fwd, l = prev_of(sym, p), r = next_of(sym, q), w = sym[p].weight;
    int rc;
    t->pairs[best].count -= w;
    if (l >= 0) {
        if ((rc = pair_lost(t, sym[l].tok, a, w)) != BPE_OK) return rc;
        if ((rc = pair_gained(t, sym[l].tok, n, w, l)) != BPE_OK) return rc;
    }
    if (r >= 0) {
        if ((rc = pair_lost(t, sym[q].tok, sym[r].tok, w)) != BPE_OK) return rc;
        if ((rc = pair_gained(t, n, sym[r].tok, w, p)) != BPE_OK) return rc;
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
    const symbol *sym = t->sym;
    for (int64_t i = 0; i < taken.len && rc == BPE_OK; i++) {
        int64_t p = taken.pos[i];
        if (i + PREFETCH_AHEAD < taken.len) PREFETCH(&sym[taken.pos[i + PREFETCH_AHEAD]]);
        /* Stale sites are skipped: the token moved on, or this b was already merged. */
        if (sym[p].tok != a || !sym[p].fwd || sym[p + sym[p].fwd].tok != b) continue;
        rc = merge_at(t, p, best, n);
    }
    free(taken.pos);
    if (rc != BPE_OK) return rc;

    for (int64_t i = 0; i < t->n_dirty; i++) {
        int32_t idx = t->dirty[i];
        t->sites[idx].dirty = 0;
        if ((rc = pair_queue_update(&t->queue, t->pairs, idx)) != BPE_OK) return rc;
        /* At count 0 every site is stale: drop them. (The pair may gain again later, only
         * when a merge re-spells an existing token; it then starts a fresh list.) */
        if (t->pairs[idx].count == 0) sites_release(&t->sites[idx]);
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
