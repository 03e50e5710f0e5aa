/* gather.c - machine words copied by index.
 *
 * id_lists.py makes a Python list of ids, each a reference to one of the tokenizer's shared
 * int objects, with numpy's tolist() on an object array: one pass that takes a reference to
 * each item. It fills that array here, with the addresses of the ints gathered by id, instead
 * of through numpy's take, which would take and drop a reference for every item on the way.
 * This file knows nothing of objects: it copies words, and id_lists.py says why that is
 * sound. */
#include "bpe.h"

int bpe_gather_words(const uintptr_t *table, int64_t n_table, const int32_t *ids, int64_t n,
                     uintptr_t *out) {
    if (n < 0 || n_table < 0 || (n > 0 && (!ids || !out)) || (n_table > 0 && !table))
        return BPE_EINVAL;
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= n_table) return BPE_EINVAL;
        out[i] = table[id];
    }
    return BPE_OK;
}

void bpe_fill_words(uintptr_t *out, int64_t n, uintptr_t value) {
    for (int64_t i = 0; out && i < n; i++) out[i] = value;
}
