/* encoder.h - the encoder: learned merges applied within one pre-token (SPEC 2.3).
 *
 * Within a word, the adjacent pair whose merge was learned earliest is merged first; among
 * equal pairs the leftmost goes first, which is the left-to-right, non-overlapping rule of
 * training. Short words (almost all of them) use a flat array and rescan for the lowest rank,
 * as tiktoken does; long ones a tree of the lowest ranks (long_word.c), so a 50 MB pre-token
 * is O(n log n), not O(n^2). A word whose bytes are a token's, and encode to that token, is
 * one lookup instead; with bpe_encoder_set_whole_tokens, a word whose bytes are any token's
 * is that token, whatever the merges would make of it (tiktoken's rule).
 *
 * The encoder is never written after construction, so one may serve several threads at
 * once. */
#ifndef ENCODER_H
#define ENCODER_H

#include <stdint.h>

#include "bit_filter.h"
#include "bpe.h"
#include "rank_table.h"
#include "word_table.h"

#define SHORT_WORD 128 /* up to this many bytes: array + rescan */
#define NO_RANK INT32_MAX

struct bpe_encoder {
    int32_t byte_ids[256];
    rank_table ranks; /* (left, right) -> rank */
    int32_t *merged;  /* merged[rank]: the id the pair becomes */
    /* byte_pair_rank[x << 8 | y]: the rank of the ids of bytes x and y. A word starts as
     * bytes, so a third of all rank lookups are these: a 256 KB table beats the hash map. */
    int32_t *byte_pair_rank;
    /* Byte strings that encode to a single token, with that token as their count: see
     * find_whole_tokens in encoder.c. */
    word_table whole;
    bit_filter whole_hashes; /* the word hash of every key in whole */
    int64_t whole_max_len;   /* the longest key in whole: SHORT_WORD, or longer for a
                              * vocabulary given whole (bpe_encoder_set_whole_tokens) */
    int64_t n_ids;
};

/* The rank of merging ids (a, b), or NO_RANK. */
static inline int32_t encoder_rank(const bpe_encoder *e, int32_t a, int32_t b) {
    if (a < 0 || b < 0) return NO_RANK; /* a byte without a token merges with nothing */
    int32_t r = rank_table_get(&e->ranks, a, b);
    return r < 0 ? NO_RANK : r;
}

/* Merge by merge: the ids of word w[0 .. n) into ids (room for n), their number in *n_ids. */
int encoder_merge_word(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                       int64_t *n_ids);

/* Whether the word k may be a whole token: most words of a short text are (common words),
 * most distinct words of a long text are not (realmix: 84% of its first 1 000 distinct
 * pre-tokens, 12% of all 261 k). A lookup in e->whole misses the cache (~4 MB for 50 000
 * tokens), so the filter of its hashes comes first: a word that is no token is turned away
 * ~95% of the time by one read of a table that stays in L2 (128 KB), and every whole token
 * is found, however rare. */
static inline int encoder_may_be_whole(const bpe_encoder *e, const word_key *k) {
    return k->len >= 2 && k->len <= e->whole_max_len &&
           bit_filter_may_hold(&e->whole_hashes, k->hash);
}

/* Whether the word k, past the filter, is a whole token: then its id is ids[0]. */
static inline int encoder_find_whole(const bpe_encoder *e, const word_key *k, int32_t *ids,
                                     int64_t *n_ids) {
    int64_t id;
    if (!word_table_find(&e->whole, k, &id)) return 0;
    ids[0] = (int32_t)id; /* a token id */
    *n_ids = 1;
    return 1;
}

/* Encodes the word k (from word_key_of; valid for the call) into ids (room for k->len ids) and
 * sets *n_ids: one lookup if it is a whole token, else merge by merge. Inline: it runs once
 * per pre-token of a short text. */
static inline int encoder_encode_word(const bpe_encoder *e, const word_key *k, int32_t *ids,
                                      int64_t *n_ids) {
    if (encoder_may_be_whole(e, k) && encoder_find_whole(e, k, ids, n_ids)) return BPE_OK;
    return encoder_merge_word(e, k->ptr, k->len, ids, n_ids);
}

/* The same for a word of a word_table, whose key, hash and first bytes the table keeps. */
int encoder_encode_entry(const bpe_encoder *e, const word_table *t, int64_t seq, int32_t *ids,
                         int64_t *n_ids);

/* Merge by merge, for a word of more than SHORT_WORD bytes (long_word.c). */
int encode_long_word(const bpe_encoder *e, const uint8_t *w, int64_t n, int32_t *ids,
                     int64_t *n_ids);

#endif
