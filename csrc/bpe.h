/* bpe.h - the public C interface of bpe_cffi.
 *
 * Everything here is reentrant: there is no global mutable state, every object is owned by
 * the caller through an opaque handle, and each call touches only the handle it is given.
 * That matters because cffi releases the GIL around these calls, so several threads may be
 * inside the library at once.
 *
 * Every function that can fail returns one of the BPE_E* codes; nothing aborts or prints.
 * Token ids are int32, counts and positions are int64.
 */
#ifndef BPE_H
#define BPE_H

#include <stdint.h>

enum {
    BPE_OK = 0,
    BPE_ENOMEM = 1,    /* an allocation failed */
    BPE_EINVAL = 2,    /* the arguments break the documented contract */
    BPE_EOVERFLOW = 3, /* a count or a size does not fit its type */
    BPE_EINTERNAL = 4, /* an invariant broke: a bug in this library */
    BPE_EUTF8 = 5      /* the text is not valid UTF-8 */
};

/* ---- training ------------------------------------------------------------------------ */

typedef struct bpe_trainer bpe_trainer;

/* Builds the training state from the distinct pre-tokens: word i is
 * bytes[offsets[i] .. offsets[i+1]) and occurs counts[i] times (counts >= 0).
 * offsets has n_words + 1 entries, starts at 0, never decreases and ends at n_bytes.
 * bucket_limit: pairs counted below it live in O(1) frequency buckets, the others in a heap;
 * 0 picks the default. The inputs are copied; the caller may free them afterwards. */
int bpe_trainer_new(const uint8_t *bytes, int64_t n_bytes, const int64_t *offsets,
                    const int64_t *counts, int64_t n_words, int64_t bucket_limit,
                    bpe_trainer **out);

/* Performs up to max_merges further merges. Merge k of this call is written to left[k],
 * right[k] (token ids; byte b is id b, the j-th merge ever made is id 256 + j) and count[k]
 * (its pair count when it was chosen). *n_done < max_merges means no pair is left. */
int bpe_trainer_step(bpe_trainer *t, int64_t max_merges, int32_t *left, int32_t *right,
                     int64_t *count, int64_t *n_done);

void bpe_trainer_free(bpe_trainer *t);

/* ---- encoding ------------------------------------------------------------------------ */

typedef struct bpe_encoder bpe_encoder;

/* Builds an encoder. byte_ids[b] is the id of the one-byte token b, or -1 if the vocabulary
 * has none (such a byte then encodes to -1, which the caller reports).
 * Merge r (its rank) turns the adjacent ids (left[r], right[r]) into merged[r]; a pair listed
 * twice takes its last rank (as in tokenizers). Ids must lie in [0, n_ids). The encoder is
 * immutable once built, so one encoder may serve several threads at once. */
int bpe_encoder_new(const int32_t *byte_ids, const int32_t *left, const int32_t *right,
                    const int32_t *merged, int64_t n_merges, int64_t n_ids, bpe_encoder **out);

void bpe_encoder_free(bpe_encoder *e);

/* Makes every token given a whole token of e: a pre-token whose bytes are token i's encodes
 * to ids[i], whatever the merges would make of it (tiktoken's rule, and tokenizers' with
 * ignore_merges). Token i's bytes are bytes[offsets[i] .. offsets[i + 1]); one listed twice
 * takes its first id, so list them by id. Replaces the whole tokens bpe_encoder_new found
 * (those whose bytes the merges turn into them). Call it before e is used: it writes e. On an
 * error e is unchanged. */
int bpe_encoder_set_whole_tokens(bpe_encoder *e, const uint8_t *bytes, const int64_t *offsets,
                                 const int32_t *ids, int64_t n);

/* The ids of merges named by their tokens' bytes, as tokenizer files name them. Token i of the
 * vocabulary is vocab[vocab_at[i] .. vocab_at[i + 1]) with id vocab_id[i] (bytes listed twice:
 * the lowest id). Merge r's left token is parts[parts_at[2r] .. parts_at[2r + 1]), its right
 * token parts[parts_at[2r + 1] .. parts_at[2r + 2]), and the token it makes both together.
 * Writes their ids to left[r], right[r], merged[r]. BPE_EINVAL with *bad = 3r + k if merge r's
 * left (k = 0), right (1) or merged (2) token is not in the vocabulary, else *bad = -1. */
int bpe_merge_ids(const uint8_t *vocab, const int64_t *vocab_at, const int32_t *vocab_id,
                  int64_t n_vocab, const uint8_t *parts, const int64_t *parts_at,
                  int64_t n_merges, int32_t *left, int32_t *right, int32_t *merged,
                  int64_t *bad);

/* The merges a rank table (tiktoken's format, which names none) implies: every split of a
 * token into two tokens. The vocabulary is given as for bpe_merge_ids. For token i and each
 * cut k (0 < k < its length) whose two sides are both tokens, writes i to token[j], the
 * sides' ids to left[j] and right[j] and k to cut[j], for j = 0, 1, ... in token order, then
 * cut order; *n_found gets their number. room: the entries each array holds; BPE_EINVAL if
 * more splits are found (the sum of each token's length - 1 always suffices). */
int bpe_rank_splits(const uint8_t *vocab, const int64_t *vocab_at, const int32_t *vocab_id,
                    int64_t n_vocab, int32_t *token, int32_t *left, int32_t *right,
                    int32_t *cut, int64_t room, int64_t *n_found);

/* Copies n slices of src (n_src bytes) back to back into out (n_out bytes): slice i is
 * src[starts[i] .. starts[i] + sizes[i]). BPE_EINVAL, with nothing written, if a slice lies
 * outside src or they do not fit in out. (The bytes of the merges bpe_rank_splits finds.) */
int bpe_gather_bytes(const uint8_t *src, int64_t n_src, const int64_t *starts,
                     const int64_t *sizes, int64_t n, uint8_t *out, int64_t n_out);

/* A cache of encoded units (unit_cache.h) that bpe_encode calls may share, holding at most
 * max_bytes of memory (under about 175 KB: nothing), for an encoder whose ids are below n_ids
 * (the fewer, the more ids a slot holds). Several threads may use one at once. Only the encoder
 * and scanner of the calls that filled it may use it. */
typedef struct bpe_unit_cache bpe_unit_cache;

int bpe_unit_cache_new(int64_t max_bytes, int64_t n_ids, bpe_unit_cache **out);

void bpe_unit_cache_free(bpe_unit_cache *c);

/* What the cache holds (entries, and bytes in use: the slots in use and the arena filled), and
 * the units of more than a byte looked up in it and found there since it was made. Shards in
 * use by another thread at the moment are left out. */
void bpe_unit_cache_stats(bpe_unit_cache *c, int64_t *entries, int64_t *bytes, int64_t *lookups,
                          int64_t *hits);

/* ---- decoding ---------------------------------------------------------------------------- */

typedef struct bpe_decoder bpe_decoder;

/* Builds a decoder: id i's bytes are bytes[start[i] .. start[i] + len[i]), or len[i] is -1 if
 * no token has id i (0 <= i < n_ids). The bytes are copied. */
int bpe_decoder_new(const uint8_t *bytes, int64_t n_bytes, const int64_t *start,
                    const int64_t *len, int64_t n_ids, bpe_decoder **out);
/* The number of bytes ids decode to. BPE_EINVAL with *bad = i if no token has ids[i]. */
int bpe_decoder_length(const bpe_decoder *d, const int64_t *ids, int64_t n, int64_t *n_bytes,
                       int64_t *bad);
/* Writes the bytes of ids, back to back, to out (room for cap bytes) and their number to
 * *n_out; the bytes of out past *n_out may be overwritten too. BPE_EINVAL if an id has no
 * token or out is too small. */
int bpe_decoder_decode(const bpe_decoder *d, const int64_t *ids, int64_t n, uint8_t *out,
                       int64_t cap, int64_t *n_out);
void bpe_decoder_free(bpe_decoder *d);

/* ---- pre-tokenization (scan.h) ---------------------------------------------------------- */

typedef struct bpe_scanner bpe_scanner;

/* Pattern families with a scanner in C. BPE_SCAN_PIECES has none: each piece given to it is one
 * pre-token already (the caller split the text with its regex). */
enum { BPE_SCAN_PIECES = 0, BPE_SCAN_GPT2 = 1, BPE_SCAN_CL100K = 2, BPE_SCAN_O200K = 3 };

/* Builds a scanner of a family. max_digits: the cl100k family's \p{N}{1,max_digits} (3 for
 * cl100k itself; at least 1 in every family). space_run_ends: 1 for the tiktoken form of
 * cl100k (its \s++$), else 0. classes: one byte per code point (n_classes == 0x110000), as
 * scan.h lays it out, the ASCII whitespace (\t \n \v \f \r and space) whitespace; copied
 * (NULL for BPE_SCAN_PIECES, which reads none). */
int bpe_scanner_new(int family, int max_digits, int space_run_ends, const uint8_t *classes,
                    int64_t n_classes, bpe_scanner **out);
void bpe_scanner_free(bpe_scanner *s);
/* The pre-tokens of UTF-8 text[0 .. n): their ends go to ends (room for cap >= n) and their
 * number to *n_ends. BPE_EUTF8 if the text is not valid UTF-8. */
int bpe_scanner_split(const bpe_scanner *s, const uint8_t *text, int64_t n, int64_t *ends,
                      int64_t cap, int64_t *n_ends);

/* Whether code point cp is whitespace for the regex module's \s (Unicode White_Space). */
int bpe_is_whitespace(uint32_t cp);

/* The first safe edge i of a family (BPE_SCAN_GPT2, _CL100K or _O200K) with lo <= i < hi and
 * i > 0 in UTF-8 text, as the family's edge regex on bytes finds it (bpe_cffi/patterns.py)
 * reading text[0 .. limit) (hi <= limit), in *at; -1 if none (edges.c). */
int bpe_next_edge(int family, const uint8_t *text, int64_t limit, int64_t lo, int64_t hi,
                  int64_t *at);

/* Where special tokens occur in text[from .. n), as a left-to-right search cuts it: the
 * leftmost place where one occurs, the longest there, then on after it. Special j is
 * needles[offsets[j] .. offsets[j + 1]), k >= 1 of them, at least one byte each, longest first
 * (BPE_EINVAL if not). Writes each occurrence's start and special to starts and which, at
 * most cap of them, and their number to *n_found (cap means: call again from after the last
 * one). */
int bpe_find_specials(const uint8_t *text, int64_t n, int64_t from, const uint8_t *needles,
                      const int64_t *offsets, int64_t k, int64_t *starts, int32_t *which,
                      int64_t cap, int64_t *n_found);

/* Character offsets into UTF-8 text[0 .. n) made byte offsets, in place: offsets[0 .. k)
 * ascending, each at most the text's number of characters (BPE_EINVAL if not). */
int bpe_utf8_char_offsets(const uint8_t *text, int64_t n, int64_t *offsets, int64_t k);

/* Where the k >= 1 documents of UTF-8 text[0 .. n) joined by NUL bytes lie: document i is
 * text[starts[i] .. ends[i]). BPE_EINVAL if the text does not hold exactly k - 1 NUL bytes
 * (a document holds U+0000, which UTF-8 writes as that byte alone). */
int bpe_utf8_split_at_nul(const uint8_t *text, int64_t n, int64_t *starts, int64_t *ends,
                          int64_t k);

/* ---- encoding (encode.c) ------------------------------------------------------------------ */

/* Encodes pieces of UTF-8 text, the one way in for every encode method: piece i is
 * text[starts[i] .. ends[i]), split into pre-tokens by s and merged by e (SPEC 2.3), then
 * followed by the special token id then_id[i] unless it is -1. Nothing joins across two
 * pieces. starts, ends and then_id may all be NULL with n_pieces 1: the whole text, no special.
 * ids gets the ids of all pieces in order (room for out_cap: one per byte of the pieces and
 * one per special always suffices), *n_out their number, and piece_ids_end[i], if it is not
 * NULL, the number of ids up to the end of piece i and its special. BPE_EUTF8 if a piece is
 * not valid UTF-8. cache, if not NULL, gives and keeps the ids of units met before (made for
 * this e and s; used only for inputs of DIRECT_MAX_BYTES or more: encode.c). */
int bpe_encode(const bpe_encoder *e, const bpe_scanner *s, bpe_unit_cache *cache,
               const uint8_t *text, int64_t n,
               const int64_t *starts, const int64_t *ends, const int32_t *then_id,
               int64_t n_pieces, int32_t *ids, int64_t out_cap, int64_t *n_out,
               int64_t *piece_ids_end);

/* ---- counting (count.c) ------------------------------------------------------------------- */

/* A counter of byte strings. Entries keep first-insertion order. */
typedef struct bpe_counter bpe_counter;

int bpe_counter_new(bpe_counter **out);
void bpe_counter_free(bpe_counter *c);
/* Adds counts[i] to word i, laid out as for bpe_trainer_new. */
int bpe_counter_add(bpe_counter *c, const uint8_t *bytes, int64_t n_bytes,
                    const int64_t *offsets, const int64_t *counts, int64_t n_words);
/* Counts the units (units.h) of each of n_pieces separate UTF-8 texts, piece i being
 * text[starts[i] .. ends[i]) (within text[0 .. n)). BPE_EUTF8 if a piece is not valid UTF-8. */
int bpe_counter_add_units(bpe_counter *c, const bpe_scanner *s, const uint8_t *text, int64_t n,
                          const int64_t *starts, const int64_t *ends, int64_t n_pieces);
/* Adds to `words` the pre-tokens of every unit counted in `units`, times the unit's count;
 * two counters, not one twice (BPE_EINVAL). */
int bpe_counter_split_units(const bpe_counter *units, const bpe_scanner *s, bpe_counter *words);
void bpe_counter_size(const bpe_counter *c, int64_t *n_words, int64_t *n_bytes);
/* Copies the entries out: bytes (n_bytes), offsets (n_words + 1), counts (n_words). */
void bpe_counter_export(const bpe_counter *c, uint8_t *bytes, int64_t *offsets, int64_t *counts);
/* Copies the entries out with one 0xFF byte between two words (bytes: n_bytes + n_words - 1),
 * for a single bytes.split in Python (0xFF never occurs in UTF-8), and the counts. Returns 0,
 * having written nothing, if a word contains 0xFF. */
int bpe_counter_export_split(const bpe_counter *c, uint8_t *bytes, int64_t *counts);

#endif
