/* Exercise 2 — the copy-on-write KV cache that lets beams share a prefix
 * (lessons/02-beam-search.md, "What it costs"; lessons/10-state.md).
 * The reference keeps a sequence's keys and values in blocks of
 * KV_BLOCK_SIZE positions taken from a pool (reference/model/state.h): a
 * sequence holds a block table, position t lives in
 * blocks[t / KV_BLOCK_SIZE], and every block carries a reference count —
 * the number of block tables that list it. Write the three functions that
 * make beams cheap:
 *   state_fork          a new beam: share every block, copy the DeltaNet state
 *   state_truncate_kv   drop positions ≥ pos, giving back whole blocks only
 *   state_kv_for_write  where position t's key and value go: a new block
 *                       when t is past the table, a private copy of the
 *                       block when another beam still lists it
 * The checker (make exercise EX=2 FILE=this-file) runs the project's state
 * and beam-search tests with your functions inside the model and the
 * search, and the exercise's own block-by-block checks. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ---- given: the pool's two primitives (copies of reference/model/state.c's) ---- */

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

/* ---- yours ---------------------------------------------------------------- */

/* Keeps positions [0, pos): the blocks no longer needed — those holding
 * only positions ≥ pos — go back to the pool (one reference fewer each),
 * and s->pos falls to pos if it was past it. A block that holds position
 * pos − 1 stays, even if later positions in it are now stale. */
void state_truncate_kv(model_state *s, int pos) {
    /* ---- gap 1 ---- */
    (void)s, (void)pos, (void)pool_release;
    /* ---- end of gap 1 ---- */
}

/* dst becomes a copy of src that shares src's KV blocks and owns a copy of
 * its DeltaNet state (conv and recurrent) and its position. dst is built
 * on the same pool and may hold blocks of its own: give them back first.
 * Its block table (dst->blocks, dst->blocks_cap entries) may be too small
 * for src's n_blocks: grow it. */
void state_fork(model_state *dst, const model_state *src) {
    /* ---- gap 2 ---- */
    (void)dst, (void)src, (void)conv_floats, (void)recurrent_floats;
    /* ---- end of gap 2 ---- */
}

/* The key and value vectors [kv_dim] of position t in attention layer la,
 * for writing. Blocks are appended (pool_take) until the table reaches t's
 * block — grow s->blocks when n_blocks reaches blocks_cap. If t's block is
 * listed by another table too (refcount > 1), this sequence must not write
 * into it: take a new block, copy the shared block's keys and values into
 * it (every layer: block_floats floats each, block b's start at
 * keys + b · block_floats), drop this table's reference to the old block,
 * list the new one in its place, and count the copy in p->copies. Then
 * point *key and *value at position t (state_key and state_value do it). */
void state_kv_for_write(model_state *s, int la, int t, float **key, float **value) {
    /* ---- gap 3 ---- */
    (void)s, (void)la, (void)t, (void)pool_take;
    *key = *value = NULL;
    /* ---- end of gap 3 ---- */
}
