/* A wrong solution to exercise 2; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: fork lists src's blocks without counting the new references: the first beam to let go frees them.
 * Caught by: exercise_beam_cache */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static size_t block_floats(const kv_pool *p) { return (size_t)p->num_layers * KV_BLOCK_SIZE * p->kv_dim; }

/* A free block with refcount 1 (the pool grows when full: keys and values
 * may move, so take a block before you compute pointers into the pool). */
static int pool_take(kv_pool *p) {
    for (int b = 0; b < p->capacity; b++)
        if (p->refcount[b] == 0) {
            p->refcount[b] = 1;
            p->blocks_in_use++;
            return b;
        }
    int old = p->capacity, cap = old ? 2 * old : 8;
    size_t bf = block_floats(p);
    p->refcount = sp_xrealloc(p->refcount, (size_t)cap, sizeof(int), "KV block refcounts");
    p->keys = sp_xrealloc(p->keys, (size_t)cap, bf * sizeof(float), "KV cache keys");
    p->values = sp_xrealloc(p->values, (size_t)cap, bf * sizeof(float), "KV cache values");
    memset(p->refcount + old, 0, (size_t)(cap - old) * sizeof(int));
    p->capacity = cap;
    p->refcount[old] = 1;
    p->blocks_in_use++;
    return old;
}

/* One reference fewer; the block is free again at 0. */
static void pool_release(kv_pool *p, int b) {
    if (--p->refcount[b] == 0) p->blocks_in_use--;
}

/* Floats of DeltaNet state per sequence: conv [Ll, C, K−1], recurrent [Ll, Hv, Dk, Dv]. */
static size_t conv_floats(const model_state *s) { return (size_t)s->num_linear * s->conv_dim * (s->conv_width - 1); }
static size_t recurrent_floats(const model_state *s) {
    return (size_t)s->num_linear * s->lin_v_heads * s->lin_k_dim * s->lin_v_dim;
}

void state_truncate_kv(model_state *s, int pos) {
    int keep = (pos + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    while (s->n_blocks > keep) pool_release(s->pool, s->blocks[--s->n_blocks]);
    if (s->pos > pos) s->pos = pos;
}

void state_fork(model_state *dst, const model_state *src) {
    state_truncate_kv(dst, 0);
    if (dst->blocks_cap < src->n_blocks) {
        dst->blocks_cap = src->blocks_cap;
        free(dst->blocks);
        dst->blocks = sp_xcalloc((size_t)dst->blocks_cap, sizeof(int), "block table");
    }
    for (int i = 0; i < src->n_blocks; i++) {
        dst->blocks[i] = src->blocks[i];
    }
    dst->n_blocks = src->n_blocks;
    memcpy(dst->conv, src->conv, conv_floats(src) * sizeof(float));
    memcpy(dst->recurrent, src->recurrent, recurrent_floats(src) * sizeof(float));
    dst->pos = src->pos;
}

void state_kv_for_write(model_state *s, int la, int t, float **key, float **value) {
    int bi = t / KV_BLOCK_SIZE;
    kv_pool *p = s->pool;
    while (s->n_blocks <= bi) { /* a new block for a new position */
        if (s->n_blocks == s->blocks_cap) {
            s->blocks_cap = s->blocks_cap ? 2 * s->blocks_cap : 8;
            s->blocks = sp_xrealloc(s->blocks, (size_t)s->blocks_cap, sizeof(int), "block table");
        }
        s->blocks[s->n_blocks++] = pool_take(p);
    }
    int b = s->blocks[bi];
    if (p->refcount[b] > 1) { /* shared with another beam: copy before writing */
        int nb = pool_take(p);
        memcpy(p->keys + (size_t)nb * block_floats(p), p->keys + (size_t)b * block_floats(p),
               block_floats(p) * sizeof(float));
        memcpy(p->values + (size_t)nb * block_floats(p), p->values + (size_t)b * block_floats(p),
               block_floats(p) * sizeof(float));
        pool_release(p, b);
        s->blocks[bi] = nb;
        p->copies++;
    }
    *key = state_key(s, la, t);
    *value = state_value(s, la, t);
}
