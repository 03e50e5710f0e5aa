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

static inline uint64_t pair_map_slot_of(uint64_t key, int64_t cap) {
    /* Fibonacci hashing: the multiply spreads the two 32-bit ids over the high bits. */
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return h & (uint64_t)(cap - 1);
}

int pair_map_init(pair_map *m, int64_t expected);
/* Returns the value stored for key, or -1. Inline: the encoder's and the trainer's inner
 * loops call it. */
static inline int32_t pair_map_get(const pair_map *m, uint64_t key) {
    for (uint64_t i = pair_map_slot_of(key, m->cap);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (m->slots[i].key == key) return m->slots[i].val;
        if (m->slots[i].key == PAIR_MAP_EMPTY) return -1;
    }
}
/* If key is present, *val receives its value; otherwise key -> *val is inserted.
 * *inserted says which happened. */
int pair_map_get_or_put(pair_map *m, uint64_t key, int32_t *val, int *inserted);
void pair_map_free(pair_map *m);

#endif
