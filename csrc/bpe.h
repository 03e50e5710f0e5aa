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
 * twice keeps its first rank. Ids must lie in [0, n_ids). The encoder is immutable once built,
 * so one encoder may serve several threads at once. */
int bpe_encoder_new(const int32_t *byte_ids, const int32_t *left, const int32_t *right,
                    const int32_t *merged, int64_t n_merges, int64_t n_ids, bpe_encoder **out);

/* Encodes pre-tokens: word i is bytes[offsets[i] .. offsets[i+1]) (SPEC 2.3: merges applied by
 * rank within each word, never across words); offsets start at 0, never decrease and end at
 * n_bytes. Writes the ids of all words, in order, to ids
 * (room for out_cap ids; offsets[n_words] always suffices) and their number to *n_out. */
int bpe_encoder_encode(const bpe_encoder *e, const uint8_t *bytes, int64_t n_bytes,
                       const int64_t *offsets, int64_t n_words, int32_t *ids, int64_t out_cap,
                       int64_t *n_out);

void bpe_encoder_free(bpe_encoder *e);

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
 * *n_out. BPE_EINVAL if an id has no token or out is too small. */
int bpe_decoder_decode(const bpe_decoder *d, const int64_t *ids, int64_t n, uint8_t *out,
                       int64_t cap, int64_t *n_out);
void bpe_decoder_free(bpe_decoder *d);

/* ---- words copied by index (gather.c) ------------------------------------------------- */

/* out[i] = table[ids[i]] for i < n. BPE_EINVAL, at the first id outside [0, n_table), with
 * out[0 .. i) already written. */
int bpe_gather_words(const uintptr_t *table, int64_t n_table, const int32_t *ids, int64_t n,
                     uintptr_t *out);
/* out[i] = value for i < n. */
void bpe_fill_words(uintptr_t *out, int64_t n, uintptr_t value);

/* ---- units: fast pre-tokenization for GPT-2's pattern (see units.h) ------------------- */

/* Whether code point cp is whitespace for the regex module's \s (Unicode White_Space). */
int bpe_is_whitespace(uint32_t cp);

/* `classes` below: one byte per code point, n_classes == 0x110000 of them: 0 \p{L},
 * 1 \p{N}, 2 \s, 3 anything else (the caller computes it with the regex module). */

/* GPT-2's pattern on UTF-8 text: writes pre-token end offsets to ends (room for n), returns
 * their number. */
int64_t bpe_gpt2_split(const uint8_t *text, int64_t n, const uint8_t *classes,
                       int64_t n_classes, int64_t *ends);

/* Where a special token occurs: writes to out the starts of the leftmost non-overlapping
 * occurrences of needle (m >= 1 bytes) in text[from .. n), at most cap of them, and returns
 * how many it wrote (cap means: call again from the last one + m). */
int64_t bpe_find_all(const uint8_t *text, int64_t n, int64_t from, const uint8_t *needle,
                     int64_t m, int64_t *out, int64_t cap);

/* A counter of byte strings. Entries keep first-insertion order. */
typedef struct bpe_counter bpe_counter;

int bpe_counter_new(bpe_counter **out);
void bpe_counter_free(bpe_counter *c);
/* Adds counts[i] to word i, laid out as for bpe_trainer_new. */
int bpe_counter_add(bpe_counter *c, const uint8_t *bytes, int64_t n_bytes,
                    const int64_t *offsets, const int64_t *counts, int64_t n_words);
/* Counts the units of each of n_pieces separate UTF-8 texts, piece i being
 * text[starts[i] .. ends[i]) (within text[0 .. n)). BPE_EUTF8 if a piece is not valid UTF-8. */
int bpe_counter_add_units(bpe_counter *c, const uint8_t *text, int64_t n, const int64_t *starts,
                          const int64_t *ends, int64_t n_pieces);
/* Adds to `words` the pre-tokens of every unit counted in `units`, times the unit's count. */
int bpe_counter_split_units(const bpe_counter *units, const uint8_t *classes,
                            int64_t n_classes, bpe_counter *words);
void bpe_counter_size(const bpe_counter *c, int64_t *n_words, int64_t *n_bytes);
/* Copies the entries out: bytes (n_bytes), offsets (n_words + 1), counts (n_words). */
void bpe_counter_export(const bpe_counter *c, uint8_t *bytes, int64_t *offsets, int64_t *counts);
/* Copies the entries out with one 0xFF byte between two words (bytes: n_bytes + n_words - 1),
 * for a single bytes.split in Python (0xFF never occurs in UTF-8), and the counts. Returns 0,
 * having written nothing, if a word contains 0xFF. */
int bpe_counter_export_split(const bpe_counter *c, uint8_t *bytes, int64_t *counts);

/* The units of one text, each distinct one encoded once. */
typedef struct bpe_units bpe_units;
/* Large hash-table blocks kept from one scan and encode to the next (slot_cache.h). Not
 * locked: lend each cache to one call at a time. */
typedef struct bpe_slot_cache bpe_slot_cache;
int bpe_slot_cache_new(bpe_slot_cache **out);
void bpe_slot_cache_free(bpe_slot_cache *c);
/* The bytes of the blocks c holds. */
int64_t bpe_slot_cache_held(const bpe_slot_cache *c);

/* Scans pieces text[starts[i] .. ends[i]) (UTF-8, BPE_EUTF8 if invalid); after piece i comes
 * the special token then_id[i], or nothing if it is -1. Units are shared across pieces. The
 * scan's tables and bpe_encoder_encode_units' take their large blocks from cache and give them
 * back to it (cache may be NULL; else it must outlive the units). */
int bpe_units_scan(const uint8_t *text, int64_t n, const int64_t *starts, const int64_t *ends,
                   const int32_t *then_id, int64_t n_pieces, bpe_slot_cache *cache,
                   bpe_units **out);
/* Encodes what was scanned; ids needs room for one id per byte plus one per special. If
 * piece_ids_end is not NULL, piece_ids_end[i] is set to the number of ids written up to the
 * end of piece i and its special (one entry per piece scanned). */
int bpe_encoder_encode_units(const bpe_encoder *e, const bpe_units *u, const uint8_t *classes,
                             int64_t n_classes, int32_t *ids, int64_t out_cap, int64_t *n_out,
                             int64_t *piece_ids_end);
void bpe_units_free(bpe_units *u);

/* Encodes the pieces of a short UTF-8 text with GPT-2's pattern, as bpe_units_scan and
 * bpe_encoder_encode_units do (piece i is text[starts[i] .. ends[i]), BPE_EUTF8 if invalid,
 * then the special then_id[i] unless it is -1), without the units: each pre-token is encoded
 * where it occurs, a repeated one again, which for a text of a few hundred bytes costs less
 * than finding its distinct units. ids needs room for one id per byte of the pieces plus one
 * per special. */
int bpe_encoder_encode_gpt2(const bpe_encoder *e, const uint8_t *text, int64_t n,
                            const int64_t *starts, const int64_t *ends, const int32_t *then_id,
                            int64_t n_pieces, const uint8_t *classes, int64_t n_classes,
                            int32_t *ids, int64_t out_cap, int64_t *n_out);
/* The same for a whole text, which C cuts at each leftmost non-overlapping occurrence of one
 * special token (special_len bytes of valid UTF-8, special_id after the piece before it; no
 * special: special_len 0): the usual case of one special, with no pieces to pass. ids needs
 * room for n ids. */
int bpe_encoder_encode_gpt2_text(const bpe_encoder *e, const uint8_t *text, int64_t n,
                                 const uint8_t *special, int64_t special_len, int32_t special_id,
                                 const uint8_t *classes, int64_t n_classes, int32_t *ids,
                                 int64_t out_cap, int64_t *n_out);

#endif
