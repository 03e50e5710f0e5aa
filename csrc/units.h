/* units.h - UTF-8 text -> "units", and GPT-2's pattern in C.
 *
 * A unit is a run of whitespace followed by a run of non-whitespace (the last unit of a text
 * may be whitespace only). With GPT-2's pattern, pre-tokenizing each unit alone gives exactly
 * the pre-tokens of the whole text: no alternative matches from non-whitespace into the
 * whitespace after it, the pattern has no lookbehind, and the one lookahead, \s+(?!\S), sees
 * the same next character inside the unit as in the text. Most text repeats, so units are
 * counted or encoded once per distinct unit. "Whitespace" is the regex module's \s: Unicode
 * White_Space (25 code points; unlike str.isspace, U+001C-001F are not in it). */
#ifndef UNITS_H
#define UNITS_H

#include <stdint.h>

#include "word_table.h"

/* Queues each unit of UTF-8 text for adding to t (count 1 per occurrence) in batch, which the
 * caller flushes (word_batch_flush) when done: one batch serves many texts, so a short one
 * does not end with a flush too soon for its prefetches. If seq is not NULL, each
 * occurrence's number goes there in order (written by the flush; room for n: a unit has at
 * least one byte) and their number to *n_seq. BPE_EUTF8 if the text is not valid UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF are invalid, as in Python). */
int units_add(word_table *t, word_batch *batch, const uint8_t *text, int64_t n, int32_t *seq,
              int64_t *n_seq);

/* Whether text[0 .. n) is valid UTF-8 (as units_add judges it). */
int utf8_valid(const uint8_t *text, int64_t n);

/* Character classes for GPT-2's pattern, one byte per code point (0x110000 entries), computed
 * by the caller from the regex module itself so both agree on the Unicode version. */
enum { CLASS_LETTER = 0, CLASS_NUMBER = 1, CLASS_SPACE = 2, CLASS_OTHER = 3 };
#define N_CODE_POINTS 0x110000

/* Whether [start, end) pieces lie inside a buffer of n bytes. */
int pieces_in_bounds(int64_t n, const int64_t *starts, const int64_t *ends, int64_t n_pieces);

/* Splits UTF-8 text exactly as GPT-2's pattern does (regex module semantics); writes the end
 * offset of each pre-token to ends (room for n) and returns their number. Invalid UTF-8 is
 * read a byte at a time as "other" (never out of bounds), but callers pass valid text. */
int64_t gpt2_split(const uint8_t *t, int64_t n, const uint8_t *classes, int64_t *ends);

/* Adds to `words` the pre-tokens (gpt2_split) of every word of `units`, each counted as often
 * as its unit. If piece_seq is not NULL, the number in `words` of each pre-token goes there in
 * order (room for units->n_bytes: at most one per byte), and first_piece[u] (room for n + 1)
 * says where unit u's begin. Both the counter and the encoder split their distinct units so. */
int units_split(const word_table *units, const uint8_t *classes, word_table *words,
                int32_t *piece_seq, int64_t *first_piece);

#endif
