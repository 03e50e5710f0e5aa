/* unit_cache.h - the ids of units encoded by earlier calls, kept within a memory bound.
 *
 * bpe_encode encodes each distinct unit of its input once (encode.c); the cache carries those
 * ids from one call to the next, so a unit met again in a later call (most of them, in a
 * corpus read in chunks) is one lookup instead of a split and the BPE of its pre-tokens. A
 * unit's ids depend only on its bytes (it is split and merged alone), so an entry never goes
 * stale while the encoder and scanner it was made with live: one cache serves one tokenizer.
 *
 * Bounded: the memory is cut into UNIT_CACHE_SHARDS shards of equal size, each a table of
 * slots and an arena of entries, allocated when first written. A shard that is full is
 * emptied whole (no eviction order to keep up), so a cache never holds more than its bound,
 * even on text where every unit is new.
 *
 * Shared: several threads may use one cache at once without the GIL. Each shard has a lock
 * that is only ever tried a few times, never waited on: a lookup that cannot take it is a
 * miss and an entry that cannot be added is dropped, which costs a unit's encoding at worst.
 * So no thread blocks on another, and a lock left taken (by a thread that vanished in a fork)
 * only turns that shard off. */
#ifndef UNIT_CACHE_H
#define UNIT_CACHE_H

#include <stdint.h>

#include "bpe.h"
#include "word_table.h"

/* Units with longer keys or more ids are not kept: they are rare, and one such entry
 * would crowd out many. */
#define UNIT_CACHE_MAX_KEY 128
#define UNIT_CACHE_MAX_IDS 64

/* 1 if the cache holds the unit k: its ids are then in ids (room for k->len) and their number
 * in *n_ids; else 0. */
int unit_cache_find(bpe_unit_cache *c, const word_key *k, int32_t *ids, int64_t *n_ids);

/* Keeps the ids of the unit k, if they fit the limits above and the shard's lock is free. */
void unit_cache_add(bpe_unit_cache *c, const word_key *k, const int32_t *ids, int64_t n_ids);

/* Adds a call's tally to the cache's statistics. */
void unit_cache_tally(bpe_unit_cache *c, int64_t lookups, int64_t hits);

#endif
