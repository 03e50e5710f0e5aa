/* pair_map.h - open-addressing hash map from a token pair (left, right) to an int32 index.
 * Linear probing over a power-of-two table kept at most half full. There is no deletion:
 * the trainer never forgets a pair (a pair whose count fell to zero stays, with count 0). */
#ifndef PAIR_MAP_H
#define PAIR_MAP_H

#include <stdint.h>

typedef struct {
    uint64_t key;    /* PAIR_MAP_EMPTY marks a free slot */
    int32_t val;
} pair_map_slot;     /* key and value side by side: one cache miss per probe */

typedef struct {
    pair_map_slot *slots;
    int64_t cap, n;
} pair_map;

#define PAIR_MAP_EMPTY UINT64_MAX

static inline uint64_t pair_key(int32_t left, int32_t right) {
    return ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
}

int pair_map_init(pair_map *m, int64_t expected);
/* Returns the value stored for key, or -1. */
int32_t pair_map_get(const pair_map *m, uint64_t key);
/* If key is present, *val receives its value; otherwise key -> *val is inserted.
 * *inserted says which happened. */
int pair_map_get_or_put(pair_map *m, uint64_t key, int32_t *val, int *inserted);
void pair_map_free(pair_map *m);

#endif
