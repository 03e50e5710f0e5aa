/* find.h - the next occurrence of a byte string (find.c), for the C callers that cut a text
 * at a special token themselves. */
#ifndef FIND_H
#define FIND_H

#include <stdint.h>

/* The start of the first occurrence of needle[0 .. m) (m >= 1) in text[from .. n), or -1. */
int64_t find_next(const uint8_t *text, int64_t n, int64_t from, const uint8_t *needle,
                  int64_t m);

#endif
