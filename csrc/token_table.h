/* token_table.h - the bytes of every token, for tie-breaking by byte order.
 *
 * Ids 0..255 are the single bytes; each merge appends the concatenation of two tokens and
 * gets the next id (SPEC 1.1). The reference algorithm knows tokens only by their bytes, so
 * if two merges ever spelled the same bytes ((a, bc) and (ab, c)) they would be one token for
 * counting. We have not found an input where that happens (a random search of 40 000 small
 * corpora found none), but nothing here relies on it: the table interns bytes, every id has a
 * canonical id (the first id with the same bytes), and words only ever hold canonical ids. */
#ifndef TOKEN_TABLE_H
#define TOKEN_TABLE_H

#include <stdint.h>

typedef struct {
    uint8_t *bytes;  /* all token bytes, back to back */
    int64_t n_bytes, cap_bytes;
    int64_t *start;  /* start[id]: offset of token id in bytes */
    int64_t *len;    /* len[id]: its length */
    int32_t *canon;  /* canon[id]: the first id with the same bytes */
    int32_t n, cap;  /* number of tokens, capacity of start/len/canon */
    int32_t *slots;  /* open-addressing index bytes -> canonical id; -1 is free */
    uint64_t *hash;  /* hash[id]: hash of its bytes */
    int64_t n_slots;
} token_table;

int token_table_init(token_table *tt);
/* Appends the token bytes(a) + bytes(b) under the next id, written to *id; *canonical gets
 * the first id spelled the same (== *id when the bytes are new). */
int token_table_add(token_table *tt, int32_t a, int32_t b, int32_t *id, int32_t *canonical);
/* <0, 0, >0 as bytes(a) sorts before, equal to, after bytes(b) (Python bytes order). */
int token_table_cmp(const token_table *tt, int32_t a, int32_t b);
void token_table_free(token_table *tt);

#endif
