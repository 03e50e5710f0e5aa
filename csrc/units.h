/* units.h - UTF-8 text cut into "units" that pre-tokenize independently.
 *
 * A unit is a stretch of text between two safe cuts: places where pre-tokenizing the two
 * sides apart gives exactly the pre-tokens of the whole. Real text repeats, so the units are
 * counted (training) or encoded (encoding) once per distinct unit, and each distinct unit is
 * split into pre-tokens once. Which cuts are safe depends on the pattern family:
 *
 * - every family: before a whitespace character that follows a non-whitespace one. No
 *   alternative of these patterns matches from non-whitespace into the whitespace after it
 *   (but for the exception below), none looks behind, and their only look-aheads (\s+(?!\S),
 *   and $ in the tiktoken forms) see the same next character on both sides of the cut, or only
 *   reach the end of a run of whitespace, which the cut cannot end;
 * - except, in the cl100k and o200k families, before \r or \n after a character that is not a
 *   letter or a number: their punctuation alternative ( ?[^\s\p{L}\p{N}]+[\r\n]* and
 *   [\r\n/]*) carries the line breaks after punctuation along;
 * - and, in those families only, after \r or \n before a non-whitespace character (o200k: but
 *   /, which its punctuation carries along after line breaks too): there \s*[\r\n] takes a
 *   run of whitespace up to its last line break, so a pre-token always ends at that line break,
 *   and no alternative can start with \r or \n and go on into the text after it. (Not in
 *   GPT-2's pattern, whose \s+(?!\S) leaves the last line break of a run to the next
 *   pre-token only when text follows.)
 *
 * With BPE_SCAN_PIECES each piece is one unit: the caller's regex has already cut it. */
#ifndef UNITS_H
#define UNITS_H

#include <stdint.h>

#include "scan.h"
#include "word_table.h"

/* Where a cut of text into units has got to (units_next). */
typedef struct {
    int64_t base, start; /* the next block of 64 bytes; where the current unit began */
    uint64_t after_space, after_break, next_space, next_cont; /* see units_next */
} unit_cursor;

#define UNITS_NEXT_MAX 512 /* room units_next needs for the ends of one step */

/* Starts a cursor at the beginning of a text. */
void units_start(unit_cursor *c);

/* The ends of the next units of UTF-8 text[0 .. n) (one step: up to UNITS_NEXT_MAX) go to
 * ends and their number to *n_ends; 0 once the text is done. BPE_EUTF8 if the text is not
 * valid UTF-8 (overlong forms, surrogates and code points past U+10FFFF are invalid, as in
 * Python). */
int units_next(const bpe_scanner *s, const uint8_t *text, int64_t n, unit_cursor *c,
               int64_t *ends, int64_t *n_ends);

/* Queues each unit of UTF-8 text for adding to t (count 1 per occurrence) in batch, which the
 * caller flushes (word_batch_flush) when done: one batch serves many texts. If seq is not
 * NULL, each occurrence's number goes there in order (written by the flush; room for n: a
 * unit has at least one byte) and their number to *n_seq. BPE_EUTF8 if the text is not valid
 * UTF-8 (overlong forms, surrogates and code points past U+10FFFF are invalid, as in
 * Python). */
int units_add(word_table *t, word_batch *batch, const bpe_scanner *s, const uint8_t *text,
              int64_t n, int32_t *seq, int64_t *n_seq);

/* Adds to `words` the pre-tokens (scan_split) of every word of `units`, each counted as often
 * as its unit. If piece_seq is not NULL, the number in `words` of each pre-token goes there in
 * order (room for units->n_bytes: at most one per byte), and first_piece[i] (room for one
 * more than the words) says where word i's begin. */
int units_split(const word_table *units, const bpe_scanner *s, word_table *words,
                int32_t *piece_seq, int64_t *first_piece);

/* Whether [start, end) pieces lie inside a buffer of n bytes. */
int pieces_in_bounds(int64_t n, const int64_t *starts, const int64_t *ends, int64_t n_pieces);

#endif
